"""Honest fp32 softmax for tests/tasks/softmax.py using libdevice's exp2 (fast exp: exp(x) = exp2(x*log2 e)),
imported with the version fallback Triton projects use (triton.language.extra.libdevice, then the older
triton.language.extra.cuda.libdevice), plus a one-row-per-program kernel with next_power_of_2 columns."""

import math

import torch
import triton
import triton.language as tl
from torch import nn

try:
    from triton.language.extra import libdevice
except ImportError:
    from triton.language.extra.cuda import libdevice

LOG2E = tl.constexpr(1.0 / math.log(2.0))


@triton.jit
def _softmax_libdevice(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    z = (x - tl.max(x, axis=0)) * LOG2E
    e = libdevice.exp2(z)
    tl.store(y_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        _softmax_libdevice[(n_rows,)](x, y, n_cols, x.stride(0), BLOCK=triton.next_power_of_2(n_cols))
        return y
