"""SwiGLU on a fused gate/up projection output: ``silu(x[..., :h]) * x[..., h:]`` in bf16.

x is [tokens, 2h] (Llama-2-7B MLP: h = 11008). HBM floor: read x and write the half-width
result: ``tokens * 2h * 2 + tokens * h * 2`` bytes (8192 x 22016: 541 MB, 0.127 ms at 4.27 TB/s).
"""

import torch
import torch.nn.functional as F
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = x.chunk(2, dim=-1)
        return F.silu(gate) * up


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(8192, 22016, dtype=torch.bfloat16)]


def get_cases():
    return [get_inputs(), [torch.randn(4096, 28672, dtype=torch.bfloat16)]]


def get_small_cases():
    return [[torch.randn(37, 246, dtype=torch.bfloat16)], [torch.randn(66, 128, dtype=torch.bfloat16)]]


def hbm_bytes(x):
    return x.numel() * x.element_size() * 3 // 2
