"""Minimal: the int8 range read from torch.iinfo (``torch.iinfo(torch.int8).max``), an int attribute of a dtype-info
object, used for the quantisation clamp."""
import torch
import triton
import triton.language as tl
from torch import nn

QMAX = float(torch.iinfo(torch.int8).max)  # 127.0


@triton.jit
def _quant_row_kernel(x_ptr, q_ptr, s_ptr, n_cols, qmax, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    scale = tl.maximum(tl.max(tl.abs(x), axis=0), 1e-8) / qmax
    v = x / scale
    r = (v + 12582912.0) - 12582912.0  # round half to even
    r = tl.minimum(tl.maximum(r, -qmax), qmax)
    tl.store(q_ptr + row * n_cols + cols, r.to(tl.int8), mask=mask)
    tl.store(s_ptr + row, scale)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor):
        x = x.contiguous()
        rows, cols = x.shape
        q = torch.empty((rows, cols), dtype=torch.int8, device=x.device)
        s = torch.empty((rows, 1), dtype=torch.float32, device=x.device)
        _quant_row_kernel[(rows,)](x, q, s, cols, QMAX, BLOCK=triton.next_power_of_2(cols))
        return q, s
