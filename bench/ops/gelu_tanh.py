"""GELU with the tanh approximation (GPT-2 / Gemma MLPs) on bf16 activations: ``F.gelu(x, approximate="tanh")``.

HBM floor: read x and write y: ``2 * numel * 2`` bytes (training: 8192 tokens x an MLP width of
16384, 537 MB, 0.126 ms at 4.27 TB/s on an H200; decode: 32 tokens, 2 MB).
"""

import torch
import torch.nn.functional as F
from torch import nn

WIDTH = 16384


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x, approximate="tanh")


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(8192, WIDTH, dtype=torch.bfloat16)]


def get_cases():
    return [get_inputs(), [torch.randn(32, WIDTH, dtype=torch.bfloat16)]]


def get_small_cases():
    return [[torch.randn(37, 123, dtype=torch.bfloat16)], [torch.randn(2, 1000, dtype=torch.bfloat16)]]


def hbm_bytes(x):
    return 2 * x.numel() * x.element_size()
