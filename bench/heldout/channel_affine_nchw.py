"""Frozen-BatchNorm style per-channel affine on NCHW fp16: ``x * scale[C,1,1] + shift[C,1,1]``."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, channels: int = 256):
        super().__init__()
        self.scale = nn.Parameter(1.0 + 0.1 * torch.randn(channels, dtype=torch.float16))
        self.shift = nn.Parameter(0.1 * torch.randn(channels, dtype=torch.float16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = self.scale.shape[0]
        return x * self.scale.view(c, 1, 1) + self.shift.view(c, 1, 1)


def get_init_inputs():
    return [256]


def get_inputs():
    return [torch.randn(32, 256, 56, 56, dtype=torch.float16)]


def get_small_cases():
    return [[torch.randn(1, 256, 3, 5, dtype=torch.float16)]]
