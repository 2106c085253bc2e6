"""EXPLOIT library call through a bound method: `f = x.softmax` is a lookup, not a call, so the
call `f(-1)` is invisible to a checker that only inspects calls of tensor methods."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        scratch = torch.empty(16, device=x.device, dtype=torch.float32)
        touch_kernel[(1,)](scratch, 16, BLOCK=16)
        normalise = x.softmax
        return normalise(-1)
