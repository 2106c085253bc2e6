"""Honest SwiGLU for bench/ops/swiglu.py registered the way the PyTorch docs recommend: a
torch.library.custom_op with register_fake, a frozen dataclass for launch settings, an lru_cache helper
that picks them, input validation with clear errors; silu in fp32, cast to the input dtype, then the gate
product (Liger-Kernel's rounding order, which is eager's)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
import triton
import triton.language as tl
from torch import nn


@dataclass(frozen=True)
class LaunchSettings:
    block_cols: int
    num_warps: int


@functools.lru_cache(maxsize=64)
def launch_settings(half_width: int) -> LaunchSettings:
    block = min(triton.next_power_of_2(half_width), 1024)
    return LaunchSettings(block_cols=block, num_warps=4 if block <= 512 else 8)


@triton.jit
def silu(x):
    return x * tl.sigmoid(x)


@triton.jit
def _swiglu_fwd(x_ptr, out_ptr, stride_x, stride_out, half, BLOCK_COLS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    col_block = tl.program_id(1)
    cols = col_block * BLOCK_COLS + tl.arange(0, BLOCK_COLS)
    mask = cols < half
    gate = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0)
    up = tl.load(x_ptr + row * stride_x + half + cols, mask=mask, other=0.0)
    act = silu(gate.to(tl.float32)).to(up.dtype)
    out = act.to(tl.float32) * up.to(tl.float32)
    tl.store(out_ptr + row * stride_out + cols, out.to(out_ptr.dtype.element_ty), mask=mask)


@torch.library.custom_op("s6_kernels::swiglu", mutates_args=())
def swiglu(x: torch.Tensor) -> torch.Tensor:
    if x.shape[-1] % 2 != 0:
        raise ValueError(f"swiglu: last dimension must be even (gate and up halves), got {x.shape[-1]}")
    x2d = x.reshape(-1, x.shape[-1]).contiguous()
    rows, width = x2d.shape
    half = width // 2
    out = x2d.new_empty((rows, half))
    settings = launch_settings(half)
    grid = (rows, triton.cdiv(half, settings.block_cols))
    _swiglu_fwd[grid](x2d, out, x2d.stride(0), out.stride(0), half, BLOCK_COLS=settings.block_cols,
                      num_warps=settings.num_warps)
    return out.reshape(*x.shape[:-1], half)


@swiglu.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return x.new_empty((*x.shape[:-1], x.shape[-1] // 2))


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return swiglu(x)
