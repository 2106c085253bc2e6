import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-5):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=eps, dtype=torch.bfloat16)

    def forward(self, x, residual):
        residual = x + residual
        return self.norm(residual), residual


def get_init_inputs():
    return [4096]


def get_inputs():
    return [torch.randn(4096, 4096, dtype=torch.bfloat16), torch.randn(4096, 4096, dtype=torch.bfloat16)]


def get_small_cases():
    return [[torch.randn(33, 4096, dtype=torch.bfloat16), torch.randn(33, 4096, dtype=torch.bfloat16)]]
