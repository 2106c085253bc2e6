"""MLP up-projection: nn.Linear(D, F) with bias on a [B, T, D] bf16 input, then SiLU."""

import torch
import torch.nn.functional as F
from torch import nn


class Model(nn.Module):
    def __init__(self, d_model: int = 1024, d_ff: int = 4096):
        super().__init__()
        self.proj = nn.Linear(d_model, d_ff, bias=True, dtype=torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(self.proj(x))


def get_init_inputs():
    return [1024, 4096]


def get_inputs():
    return [torch.randn(8, 1024, 1024, dtype=torch.bfloat16)]


def get_small_cases():
    return [[torch.randn(1, 5, 1024, dtype=torch.bfloat16)]]
