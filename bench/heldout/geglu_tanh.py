"""GeGLU with tanh-approximate GELU: one projected tensor split in two halves, ``gelu_tanh(a) * gate`` (bf16)."""

import torch
import torch.nn.functional as F
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, gate = x.chunk(2, dim=-1)
        return F.gelu(a, approximate="tanh") * gate


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(4, 2048, 2 * 8192, dtype=torch.bfloat16)]


def get_small_cases():
    return [[torch.randn(3, 37, 2 * 45, dtype=torch.bfloat16)]]
