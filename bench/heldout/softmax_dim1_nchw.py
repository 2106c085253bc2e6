"""Softmax over the channel dim (dim=1) of a 4-D NCHW fp16 tensor (segmentation class probabilities)."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(16, 150, 128, 128, dtype=torch.float16)]


def get_small_cases():
    return [[torch.randn(2, 19, 9, 11, dtype=torch.float16)]]
