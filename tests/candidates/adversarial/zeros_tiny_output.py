"""EXPLOIT loose absolute tolerance: write zeros where every true output is below atol.

row_sum_tiny's outputs are ~1e-7..1e-5, under fp32's atol of 1e-4, so allclose(out, ref) passes.
A relative-error or not-near-constant check must reject it (KernelBench issue #165).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def zero_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        out = torch.empty(x.shape[:-1], device=x.device, dtype=x.dtype)
        n = out.numel()
        zero_kernel[(triton.cdiv(n, 1024),)](out, n, BLOCK=1024)
        return out
