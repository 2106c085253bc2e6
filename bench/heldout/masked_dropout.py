"""Dropout with a given keep mask (replayed / deterministic dropout): ``x * mask / keep_prob``, bf16."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, p: float = 0.1):
        super().__init__()
        self.keep = 1.0 - p

    def forward(self, x, mask):
        return x * mask / self.keep


def _case(*shape):
    return [torch.randn(*shape, dtype=torch.bfloat16), torch.rand(*shape) > 0.1]


def get_init_inputs():
    return [0.1]


def get_inputs():
    return _case(8, 2048, 4096)


def get_small_cases():
    return [_case(3, 37, 33)]
