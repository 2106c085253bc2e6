"""Dequantise an int8 weight with per-output-row fp32 scales into bf16 (weight-only quantised linear)."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, q, scale):
        return (q.float() * scale[:, None]).to(torch.bfloat16)


def _case(r, c):
    return [torch.randint(-127, 128, (r, c), dtype=torch.int8), torch.rand(r) * 0.02 + 1e-3]


def get_init_inputs():
    return []


def get_inputs():
    return _case(14336, 4096)


def get_small_cases():
    return [_case(37, 101)]
