"""Bias + GELU + residual where the activation is an enum.IntEnum member handed straight to a tl.constexpr
parameter (Triton specialises on it as on any int: IntEnum is an int), the way libraries pass their
`ActivationType.GELU` through launchers; fp32 math, eager's roundings to the activation dtype."""

import enum

import torch
import triton
import triton.language as tl
from torch import nn


class ActivationType(enum.IntEnum):
    NONE = 0
    GELU = 1
    SILU = 2


@triton.jit
def _fused_bias_act_res(x_ptr, b_ptr, r_ptr, y_ptr, n, n_cols, ACT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs % n_cols, mask=mask, other=0.0)
    r = tl.load(r_ptr + offs, mask=mask, other=0.0)
    h = (x.to(tl.float32) + b.to(tl.float32)).to(x.dtype).to(tl.float32)
    if ACT == 1:
        h = 0.5 * h * (1.0 + tl.erf(h * 0.7071067811865476))
    elif ACT == 2:
        h = h * tl.sigmoid(h)
    h = h.to(x.dtype).to(tl.float32)
    tl.store(y_ptr + offs, (h + r.to(tl.float32)).to(y_ptr.dtype.element_ty), mask=mask)


def fused_bias_act_residual(x, bias, residual, act: ActivationType = ActivationType.GELU):
    x = x.contiguous()
    residual = residual.contiguous()
    bias = bias.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    BLOCK = 1024
    _fused_bias_act_res[(triton.cdiv(n, BLOCK),)](x, bias, residual, y, n, x.shape[-1], ACT=act, BLOCK=BLOCK)
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = ActivationType.GELU

    def forward(self, x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return fused_bias_act_residual(x, bias, residual, self.act)
