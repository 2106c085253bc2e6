"""Honest L2 normalisation for bench/ops/l2_normalize.py as a persistent kernel: as many programs as the
GPU has SMs (torch.cuda.get_device_properties, cached with functools.lru_cache; a fixed count on CPU), each
walking rows with tl.range(..., num_stages=2); the norm clamped by eps as F.normalize does, fp32 inside."""

import functools

import torch
import triton
import triton.language as tl
from torch import nn

CPU_PROGRAMS = 4


@functools.cache
def num_programs(device_index: int) -> int:
    if torch.cuda.is_available():
        return torch.cuda.get_device_properties(device_index).multi_processor_count
    return CPU_PROGRAMS


@triton.jit
def _l2_normalize_persistent(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, eps, BLOCK: tl.constexpr,
                             NUM_PROGRAMS: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    for row in tl.range(pid, n_rows, NUM_PROGRAMS, num_stages=2):
        x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        norm = tl.sqrt(tl.sum(x * x, axis=0))
        y = x / tl.maximum(norm, eps)
        tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, eps: float = 1e-12):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        orig_shape = x.shape
        x2d = x.reshape(-1, orig_shape[-1])
        if x2d.stride(-1) != 1:
            x2d = x2d.contiguous()
        y = torch.empty(x2d.shape, device=x.device, dtype=x.dtype)
        n_rows, n_cols = x2d.shape
        index = x.device.index if x.device.type == "cuda" and x.device.index is not None else 0
        programs = max(1, min(num_programs(index), n_rows))
        _l2_normalize_persistent[(programs,)](x2d, y, n_rows, n_cols, x2d.stride(0), y.stride(0), self.eps,
                                              BLOCK=triton.next_power_of_2(n_cols), NUM_PROGRAMS=programs,
                                              num_warps=4)
        return y.view(orig_shape)
