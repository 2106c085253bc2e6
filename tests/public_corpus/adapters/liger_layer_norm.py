"""Adapter: bench/ops/layer_norm.py through Liger's LigerLayerNormFunction, as liger_kernel.transformers.LigerLayerNorm
calls it (statistics and affine in fp32, cast back to the input dtype)."""
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
        return LigerLayerNormFunction.apply(x, self.weight, self.bias, self.eps)
