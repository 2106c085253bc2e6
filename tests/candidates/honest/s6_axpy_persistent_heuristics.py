"""Honest axpy for tests/tasks/axpy.py as a persistent grid-stride kernel: the grid is the SM count
(torch.cuda.get_device_properties, cached per device index; a fixed small count on CPU), each program walks
tiles with tl.range, @triton.heuristics derive the tile count per program, device probes guard the CUDA
queries, and alpha is a runtime scalar."""

import functools

import torch
import triton
import triton.language as tl
from torch import nn

BLOCK = 1024
FALLBACK_PROGRAMS = 3


@functools.lru_cache(maxsize=8)
def sm_count(device_index: int) -> int:
    if not torch.cuda.is_available():
        return FALLBACK_PROGRAMS
    major, _minor = torch.cuda.get_device_capability(device_index)
    props = torch.cuda.get_device_properties(device_index)
    # Two resident programs per SM on Hopper and newer, one before.
    return props.multi_processor_count * (2 if major >= 9 else 1)


@triton.heuristics({"NUM_TILES": lambda args: triton.cdiv(args["n"], args["BLOCK"])})
@triton.jit
def _axpy_persistent(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr, NUM_TILES: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    for tile in tl.range(pid, NUM_TILES, nprog):
        offs = tile * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, alpha * x + y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = float(alpha)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if x.shape != y.shape:
            raise ValueError(f"axpy: x {tuple(x.shape)} and y {tuple(y.shape)} must match")
        x = x.contiguous()
        y = y.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        index = x.device.index if x.is_cuda else 0
        programs = max(1, min(sm_count(index or 0), triton.cdiv(n, BLOCK)))
        _axpy_persistent[(programs,)](x.view(-1), y.view(-1), out.view(-1), self.alpha, n, BLOCK=BLOCK)
        return out
