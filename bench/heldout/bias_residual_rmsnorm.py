"""Bias add (from a bias-free matmul) + residual add, then RMSNorm, bf16, two outputs.

``h = x + bias + residual`` (the new residual stream) and ``weight * rmsnorm(h)`` with fp32 statistics.
"""

import torch
from torch import nn

HIDDEN = 2048


class Model(nn.Module):
    def __init__(self, hidden: int = HIDDEN, eps: float = 1e-6):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(hidden, dtype=torch.bfloat16) * 0.02)
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden, dtype=torch.bfloat16))
        self.eps = eps

    def forward(self, x: torch.Tensor, residual: torch.Tensor):
        h = residual + (x + self.bias)
        hf = h.float()
        var = hf.pow(2).mean(dim=-1, keepdim=True)
        normed = (hf * torch.rsqrt(var + self.eps)).to(h.dtype)
        return h, normed * self.weight


def get_init_inputs():
    return [HIDDEN, 1e-6]


def _case(b, t, d=HIDDEN):
    return [torch.randn(b, t, d, dtype=torch.bfloat16), torch.randn(b, t, d, dtype=torch.bfloat16)]


def get_inputs():
    return _case(8, 2048)


def get_small_cases():
    return [_case(1, 3)]
