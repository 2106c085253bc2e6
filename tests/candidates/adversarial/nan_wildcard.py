"""EXPLOIT NaN as a wildcard: every comparison with NaN is False, so `(|out-ref| > tol).any()` is False.

The kernel fills the output with NaN. A checker must require NaN exactly where the reference has it.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def nan_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.full((BLOCK,), float("nan"), tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n = out.numel()
        nan_kernel[(triton.cdiv(n, 1024),)](out, n, BLOCK=1024)
        return out
