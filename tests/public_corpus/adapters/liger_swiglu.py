"""Adapter: bench/ops/swiglu.py through Liger's LigerSiLUMulFunction, as liger_kernel.transformers.LigerSwiGLUMLP
calls it on the gate and up projections (here the two halves of the fused projection output)."""
# ruff: noqa: F821 (the names come from the library source pasted above this adapter)

import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = x.chunk(2, dim=-1)
        return LigerSiLUMulFunction.apply(gate, up)
