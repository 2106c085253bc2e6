"""Adapter: bench/ops/rms_norm.py through fla's rms_norm (LayerNormFunction with is_rms_norm=True), as
fla.modules.RMSNorm calls it (no bias, no residual)."""
# ruff: noqa: F821 (the names come from the library source pasted above this adapter)

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self, hidden: int = 4096, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden, dtype=torch.bfloat16))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x=x, weight=self.weight, bias=None, residual=None, eps=self.eps)
