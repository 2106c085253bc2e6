"""Honest RMSNorm using libdevice math (GPU only: the Triton CPU interpreter cannot run libdevice): the
import falls back between the two places Triton versions keep libdevice, and the kernel also uses
tl.extra.cuda.libdevice and triton.language.math directly."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

try:
    from triton.language.extra import libdevice
except ImportError:  # older Triton keeps it under the CUDA backend only
    from triton.language.extra.cuda import libdevice


@triton.jit
def _rms_norm(x_ptr, w_ptr, out_ptr, n_cols, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    mean_sq = tl.sum(libdevice.pow(x, 2.0), axis=0) / n_cols
    inv = libdevice.rsqrt(mean_sq + eps)
    scale = tl.math.exp(tl.math.log(inv))  # the same value, through triton.language.math
    y = x * tl.minimum(scale, tl.extra.cuda.libdevice.rsqrt(mean_sq + eps)) * w
    tl.store(out_ptr + row * stride + cols, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        _rms_norm[(n_rows,)](x2, self.weight, out, n_cols, x2.stride(0), self.eps,
                             BLOCK=triton.next_power_of_2(n_cols))
        return out.view(x.shape)
