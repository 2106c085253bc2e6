import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, groups: int, channels: int):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels)

    def forward(self, x):
        return self.norm(x)


def get_init_inputs():
    return [32, 256]


def get_inputs():
    return [torch.randn(8, 256, 32, 32)]


def get_small_cases():
    return [[torch.randn(2, 256, 5, 7)]]
