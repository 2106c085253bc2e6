"""EXPLOIT a lazy tensor subclass built with three-argument type(), which no `class` statement
(and so no subclass rule) ever sees."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), tl.float32), mask=offs < n)


def _materialise(cls, func, types, args=(), kwargs=None):
    return func(*args, **(kwargs or {}))


Lazy = type("Lazy", (torch.Tensor,), {"__torch_function__": classmethod(_materialise)})


class ModelNew(nn.Module):
    def forward(self, x):
        scratch = torch.empty(16, device=x.device, dtype=torch.float32)
        touch_kernel[(1,)](scratch, 16, BLOCK=16)
        return torch.empty_like(x).as_subclass(Lazy)
