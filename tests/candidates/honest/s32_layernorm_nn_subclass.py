"""Minimal: ModelNew subclasses nn.LayerNorm (keeps weight/bias/eps and checkpoint names) and overrides forward
with a Triton kernel."""
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _ln_fwd(X, Y, W, B, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    rstd = tl.rsqrt(tl.sum(xc * xc, axis=0) / N + eps)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(B + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + row * N + cols, (xc * rstd * w + b).to(Y.dtype.element_ty), mask=mask)


class ModelNew(nn.LayerNorm):
    def __init__(self, hidden: int = 4096, eps: float = 1e-5):
        super().__init__(hidden, eps=eps, dtype=torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        y = torch.empty_like(x2)
        _ln_fwd[(x2.shape[0],)](x2, y, self.weight, self.bias, x2.shape[1], self.eps,
                                BLOCK_N=triton.next_power_of_2(x2.shape[1]))
        return y.view(x.shape)
