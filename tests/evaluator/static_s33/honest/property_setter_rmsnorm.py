import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _rms_kernel(X, Y, W, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    y = (x * rstd).to(Y.dtype.element_ty).to(tl.float32) * w
    tl.store(Y + row * N + cols, y.to(Y.dtype.element_ty), mask=mask)


def rms_norm(x, weight, eps):
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    y = torch.empty_like(x2)
    _rms_kernel[(x2.shape[0],)](x2, y, weight, x2.shape[1], eps, BLOCK_N=triton.next_power_of_2(x2.shape[1]))
    return y.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self, hidden: int = 4096, eps: float = 1e-6):
        super().__init__()
        self._weight = nn.Parameter(torch.ones(hidden, dtype=torch.bfloat16))
        self._eps = eps

    @property
    def eps(self):
        return self._eps

    @eps.setter
    def eps(self, value):
        self._eps = float(value)

    @property
    def weight_t(self):
        return self._weight

    @weight_t.setter
    def weight_t(self, w):
        self._weight = w

    def forward(self, x):
        return rms_norm(x, self.weight_t, self.eps)
