"""Adapter: bench/ops/layer_norm.py through fla's layer_norm (LayerNormFunction), as fla.modules.LayerNorm
calls it (no residual)."""
# ruff: noqa: F821 (the names come from the library source pasted above this adapter)

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self, hidden: int = 4096, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden, dtype=torch.bfloat16))
        self.bias = nn.Parameter(torch.zeros(hidden, dtype=torch.bfloat16))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return layer_norm(x=x, weight=self.weight, bias=self.bias, residual=None, eps=self.eps)
