"""A scaled row sum whose outputs are tiny (|out| well below fp32's atol of 1e-4).

This task exists for the "loose absolute tolerance" exploit: a kernel that writes zeros passes a plain
allclose(atol=1e-4) here, so the verifier must also check the relative error and that the output is not
near-constant when the reference is not. With scale 1e-8 and at most 1000 columns the outputs stay
below 1e-4 under every input distribution the verifier draws (task, scaled x8, shifted around 1.5).
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=-1) * self.scale


def get_init_inputs():
    return [1e-8]


def get_inputs():
    return [torch.randn(16384, 1000)]


def get_cases():
    return [get_inputs(), [torch.randn(1000, 123)]]


def get_small_cases():
    return [[torch.randn(16, 1000)], [torch.randn(37, 123)]]


def hbm_bytes(x):
    return x.numel() * x.element_size() + x.shape[0] * x.element_size()


def flops(x):
    return x.numel()
