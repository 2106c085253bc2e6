"""HONEST (an output whose storage is larger than its bytes): each call allocates rows padded to a multiple of 16
columns (aligned row starts, as vectorised stores want) and returns the unpadded slice ``buf[:, :n_cols]``: a
non-contiguous view whose storage also holds the padding the kernel leaves unwritten.

Fresh memory per call, every returned value right; the padding is never part of the output. Correct verdict:
accepted (the plain process must judge and re-check the viewed elements only, not the storage).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s27_softmax_padded(x_ptr, out_ptr, n_cols, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    y = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_stride + cols, y / tl.sum(y, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        n_rows, n_cols = x2.shape
        padded = (n_cols + 15) // 16 * 16
        buf = torch.empty((n_rows, padded), dtype=x.dtype, device=x.device)
        s27_softmax_padded[(n_rows,)](x2, buf, n_cols, padded, BLOCK=triton.next_power_of_2(n_cols))
        return buf[:, :n_cols]
