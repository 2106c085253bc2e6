import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, groups: int = 8, channels: int = 64):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels, eps=1e-6)

    def forward(self, x):
        return torch.nn.functional.silu(self.norm(x))


def get_init_inputs():
    return [8, 64]


def get_inputs():
    return [torch.randn(4, 64, 32, 32, dtype=torch.float16)]


def get_small_cases():
    return [[torch.randn(2, 64, 5, 7, dtype=torch.float16)]]
