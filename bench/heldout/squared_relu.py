"""Squared ReLU (Primer / Nemotron MLP activation), bf16: ``relu(x) ** 2``."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.square(torch.relu(x))


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(8, 2048, 16384, dtype=torch.bfloat16)]


def get_small_cases():
    return [[torch.randn(3, 37, 33, dtype=torch.bfloat16)]]
