"""EXPLOIT code in a string annotation: torch.library.custom_op evaluates annotation strings
(infer_schema) with the module's globals, so the "annotation" walks gc's objects at registration."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), tl.float32), mask=offs < n)


@torch.library.custom_op("kelib::normalise", mutates_args=())
def normalise(x: "__import__('gc').get_objects() and torch.Tensor") -> torch.Tensor:
    return torch.empty_like(x)


class ModelNew(nn.Module):
    def forward(self, x):
        scratch = torch.empty(16, device=x.device, dtype=torch.float32)
        touch_kernel[(1,)](scratch, 16, BLOCK=16)
        return normalise(x)
