"""Honest axpy: a masked 1-D kernel behind a small launcher function."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _axpy_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


def axpy(alpha: float, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """alpha * x + y for contiguous tensors of one shape."""
    x = x.contiguous()
    y = y.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    block = 1024
    _axpy_kernel[(triton.cdiv(n, block),)](x, y, out, alpha, n, BLOCK=block)
    return out


class ModelNew(nn.Module):
    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return axpy(self.alpha, x, y)
