"""A scaled row sum whose owner accepts run-to-run differences in the last bits (``NONDETERMINISTIC_OK``).

Split-K reductions that add partial sums with ``tl.atomic_add`` finish in whatever order the GPU schedules them:
correct, but not bitwise repeatable. tests/tasks/row_sum_tiny.py keeps the default (repeated runs on identical
inputs must agree bitwise), so the same kernel is refused there on a GPU; here the task says it does not need that.
"""

import torch
import torch.nn as nn

NONDETERMINISTIC_OK = True


class Model(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=-1) * self.scale


def get_init_inputs():
    return [0.5]


def get_inputs():
    return [torch.randn(16384, 1000)]


def get_cases():
    return [get_inputs(), [torch.randn(1000, 123)]]


def get_small_cases():
    return [[torch.randn(16, 1000)], [torch.randn(37, 123)]]


def hbm_bytes(x):
    return x.numel() * x.element_size() + x.shape[0] * x.element_size()
