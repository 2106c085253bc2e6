"""Honest scaled row sum for tests/tasks/row_sum_tiny.py as split-K reduction: a frozen dataclass holds the
split, a 2-D grid (rows x column chunks) adds each chunk's partial sum into a zero-initialised fp32 output with
tl.atomic_add, the scale applied per chunk (sum is linear); a shared @triton.jit helper does the chunk load."""

from dataclasses import dataclass

import torch
import triton
import triton.language as tl
from torch import nn


@dataclass(frozen=True)
class Split:
    chunk: int = 256
    num_warps: int = 2


@triton.jit
def _load_chunk(ptr, row, stride, start, n_cols, CHUNK: tl.constexpr):
    cols = start + tl.arange(0, CHUNK)
    return tl.load(ptr + row * stride + cols, mask=cols < n_cols, other=0.0)


@triton.jit
def _row_sum_split(x_ptr, out_ptr, n_cols, stride, scale, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    x = _load_chunk(x_ptr, row, stride, chunk * CHUNK, n_cols, CHUNK)
    tl.atomic_add(out_ptr + row, tl.sum(x, axis=0) * scale)


class ModelNew(nn.Module):
    def __init__(self, scale: float, split: Split = Split()):
        super().__init__()
        self.scale = scale
        self.split = split

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.zeros(n_rows, dtype=torch.float32, device=x.device)
        grid = (n_rows, triton.cdiv(n_cols, self.split.chunk))
        _row_sum_split[grid](x, out, n_cols, x.stride(0), self.scale, CHUNK=self.split.chunk,
                             num_warps=self.split.num_warps)
        return out
