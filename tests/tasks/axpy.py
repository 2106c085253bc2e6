"""axpy: out = alpha * x + y on fp32 vectors (memory-bound elementwise; alpha is a constructor argument)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.alpha * x + y


def get_init_inputs():
    return [1.75]


def get_inputs():
    n = 1 << 24
    return [torch.randn(n), torch.randn(n)]


def get_cases():
    return [get_inputs(), [torch.randn(1_000_003), torch.randn(1_000_003)]]


def get_small_cases():
    # A power of two, an odd size (not a multiple of any block) and a size just over a block.
    return [[torch.randn(n), torch.randn(n)] for n in (4096, 12_345, 1025)]


def hbm_bytes(x, y):
    return 3 * x.numel() * x.element_size()


def flops(x, y):
    return 2 * x.numel()
