"""Honest RMSNorm: a 2-D block of rows per program (row and column masks), weight loaded once."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rmsnorm_rows_kernel(x_ptr, w_ptr, out_ptr, n_rows, n_cols, stride, eps,
                        ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None] * stride + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0)
    mean_sq = tl.sum(x * x, axis=1) / n_cols
    inv_rms = tl.rsqrt(mean_sq + eps)
    tl.store(out_ptr + offs, x * inv_rms[:, None] * w[None, :], mask=mask)


class ModelNew(nn.Module):
    ROWS = 4

    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        n_rows, n_cols = x2.shape
        out = torch.empty_like(x2)
        t = torch.tensor(x2.tolist(), device=x.device)
        grid = (triton.cdiv(n_rows, self.ROWS),)
        rmsnorm_rows_kernel[grid](
            x2, self.weight, out, n_rows, n_cols, x2.stride(0), self.eps,
            ROWS=self.ROWS, BLOCK=triton.next_power_of_2(n_cols),
        )
        return out.view(x.shape)
