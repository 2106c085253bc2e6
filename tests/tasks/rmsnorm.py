"""RMSNorm with a learned weight over the last dimension, fp32.

eps is deliberately large (1e-2) so that a kernel which ignores the constructor's eps is measurably
wrong (with eps=1e-6 and unit-variance inputs the difference would sit below the tolerance).
"""

import torch
import torch.nn as nn

HIDDEN = 1000


class Model(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * inv_rms * self.weight


def get_init_inputs():
    return [HIDDEN, 1e-2]


def get_inputs():
    return [torch.randn(8192, HIDDEN)]


def get_cases():
    return [get_inputs(), [torch.randn(97, HIDDEN)]]


def get_small_cases():
    return [[torch.randn(8, HIDDEN)], [torch.randn(13, HIDDEN)]]


def hbm_bytes(x):
    return 2 * x.numel() * x.element_size()


def flops(x):
    return 4 * x.numel()
