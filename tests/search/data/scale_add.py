"""scale_add: out = alpha * x + y (a small elementwise task for the search's end-to-end tests)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.alpha * x + y


def get_init_inputs():
    return [0.5]


def get_inputs():
    return [torch.randn(1 << 20), torch.randn(1 << 20)]


def get_small_cases():
    return [[torch.randn(n), torch.randn(n)] for n in (1000, 2049)]


def hbm_bytes(x, y):
    return 3 * x.numel() * x.element_size()
