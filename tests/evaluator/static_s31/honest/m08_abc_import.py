"""Minimal: an abstract base class (``abc.ABC`` + ``@abstractmethod``) for normalisers; the implementation
launches a Triton kernel."""
from abc import ABC, abstractmethod

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _l2norm_kernel(x_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=m, other=0.0).to(tl.float32)
    r = 1.0 / tl.maximum(tl.sqrt(tl.sum(x * x, axis=0)), eps)
    tl.store(y_ptr + row * n_cols + cols, (x * r).to(y_ptr.dtype.element_ty), mask=m)


class Normalizer(ABC):
    @abstractmethod
    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        ...


class L2Normalizer(Normalizer):
    def __init__(self, eps: float):
        self.eps = eps

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        y = torch.empty_like(x2)
        _l2norm_kernel[(x2.shape[0],)](x2, y, x2.shape[1], self.eps, BLOCK=triton.next_power_of_2(x2.shape[1]))
        return y.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self, eps: float = 1e-12):
        super().__init__()
        self.normalizer = L2Normalizer(eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.normalizer.normalize(x)
