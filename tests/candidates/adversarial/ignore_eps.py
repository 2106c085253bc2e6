"""EXPLOIT changing the problem's hyper-parameters: RMSNorm with eps hard-coded to 1e-6.

The constructor's eps (the task uses 1e-2) is accepted and ignored; the usual default is used instead.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    inv = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + 1e-6)
    tl.store(out_ptr + row * n_cols + cols, x * inv * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        rmsnorm_kernel[(x.shape[0],)](x, self.weight, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
