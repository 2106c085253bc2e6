"""Honest scaled row sum in two kernels: partial sums per column chunk, then a final reduction.

The scale is applied once, after the full sum, as the reference does (x.sum(-1) * scale).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def partial_sum_kernel(x_ptr, part_ptr, n_cols, stride, n_chunks, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    cols = chunk * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(part_ptr + row * n_chunks + chunk, tl.sum(x, axis=0))


@triton.jit
def finish_kernel(part_ptr, out_ptr, n_chunks, scale, CHUNKS: tl.constexpr):
    row = tl.program_id(0)
    idx = tl.arange(0, CHUNKS)
    parts = tl.load(part_ptr + row * n_chunks + idx, mask=idx < n_chunks, other=0.0)
    tl.store(out_ptr + row, tl.sum(parts, axis=0) * scale)


class ModelNew(nn.Module):
    BLOCK = 512

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        n_rows, n_cols = x2.shape
        n_chunks = triton.cdiv(n_cols, self.BLOCK)
        partial = torch.empty((n_rows, n_chunks), device=x.device, dtype=torch.float32)
        out = torch.empty(n_rows, device=x.device, dtype=x.dtype)
        partial_sum_kernel[(n_rows, n_chunks)](x2, partial, n_cols, x2.stride(0), n_chunks, BLOCK=self.BLOCK)
        finish_kernel[(n_rows,)](partial, out, n_chunks, self.scale, CHUNKS=triton.next_power_of_2(n_chunks))
        return out.view(x.shape[:-1])
