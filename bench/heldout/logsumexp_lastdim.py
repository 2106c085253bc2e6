"""Log-sum-exp over the vocabulary dim of bf16 logits, computed in fp32 (z-loss / CE normaliser)."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return torch.logsumexp(logits.float(), dim=-1)


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(8192, 32000, dtype=torch.bfloat16) * 3]


def get_small_cases():
    return [[torch.randn(37, 131, dtype=torch.bfloat16) * 3]]
