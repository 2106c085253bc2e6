"""Adapter: bench/ops/rms_norm.py through Liger's LigerRMSNormFunction, as liger_kernel.transformers.LigerRMSNorm
calls it (offset 0.0, casting_mode "llama": statistics in fp32, normalised row cast back to the input dtype, then
times the weight: the same function as the task's Model)."""
# ruff: noqa: F821 (the names come from the library source pasted above this adapter)

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self, hidden: int = 4096, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden, dtype=torch.bfloat16))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return LigerRMSNormFunction.apply(x, self.weight, self.eps, 0.0, "llama", True, None)
