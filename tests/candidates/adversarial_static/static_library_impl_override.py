"""EXPLOIT torch.library.Library used to define an op whose implementation is torch.softmax;
forward calls the op through torch.ops, so no torch compute is spelled on the forward path."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), tl.float32), mask=offs < n)


_LIB = torch.library.Library("kelib", "DEF")
_LIB.define("normalise(Tensor x) -> Tensor")
_LIB.impl("normalise", lambda t: torch.softmax(t, -1), "CompositeExplicitAutograd")


class ModelNew(nn.Module):
    def forward(self, x):
        scratch = torch.empty(16, device=x.device, dtype=torch.float32)
        touch_kernel[(1,)](scratch, 16, BLOCK=16)
        return torch.ops.kelib.normalise(x)
