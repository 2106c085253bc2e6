"""Gemma-2 logit soft-capping: ``cap * tanh(logits / cap)`` on bf16 final logits."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, cap: float = 30.0):
        super().__init__()
        self.cap = cap

    def forward(self, logits):
        return torch.tanh(logits / self.cap) * self.cap


def get_init_inputs():
    return [30.0]


def get_inputs():
    return [torch.randn(4, 1024, 32000, dtype=torch.bfloat16) * 20]


def get_small_cases():
    return [[torch.randn(3, 37, 101, dtype=torch.bfloat16) * 20]]
