"""Minimal: the usual transformer naming ``self.norm = RMSNorm(...)`` / ``self.norm(x)``, where RMSNorm is the
file's own Triton-backed module (the weight lives on ModelNew, as in the task, and is handed to the submodule)."""
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=m, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
    normed = (x * rstd).to(y_ptr.dtype.element_ty).to(tl.float32)
    tl.store(y_ptr + row * n_cols + cols, (w * normed).to(y_ptr.dtype.element_ty), mask=m)


class TritonRMSNorm(nn.Module):
    def __init__(self, eps: float):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        y = torch.empty_like(x2)
        _rmsnorm_kernel[(x2.shape[0],)](x2, weight, y, x2.shape[1], self.eps,
                                        BLOCK=triton.next_power_of_2(x2.shape[1]))
        return y.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self, hidden: int = 4096, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden, dtype=torch.bfloat16))
        self.norm = TritonRMSNorm(eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x, self.weight)
