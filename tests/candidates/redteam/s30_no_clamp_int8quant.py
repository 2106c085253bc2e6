"""int8 row quant without the clamp(min=1e-8) of the scale: an all-zero row gives 0/0."""
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _q(X, Q, S, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(X + row * n_cols + cols, mask=m, other=0.0).to(tl.float32)
    amax = tl.max(tl.abs(x), axis=0)
    scale = amax / 127.0
    q = x / scale
    r = tl.floor(q + 0.5)
    # round half to even
    tie = (r - q) == 0.5
    odd = (r - 2.0 * tl.floor(r * 0.5)) != 0.0
    r = tl.where(tie & odd, r - 1.0, r)
    r = tl.minimum(tl.maximum(r, -127.0), 127.0)
    tl.store(Q + row * n_cols + cols, r.to(tl.int8), mask=m)
    tl.store(S + row, scale)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor):
        x = x.contiguous()
        n = x.shape[-1]
        rows = x.numel() // n
        q = torch.empty(x.shape, dtype=torch.int8, device=x.device)
        s = torch.empty(x.shape[:-1] + (1,), dtype=torch.float32, device=x.device)
        _q[(rows,)](x, q, s, n, BLOCK=triton.next_power_of_2(n))
        return q, s
