"""PaLM z-loss: ``coef * mean(logsumexp(logits, -1) ** 2)`` over fp32-upcast bf16 logits."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, coef: float = 1e-4):
        super().__init__()
        self.coef = coef

    def forward(self, logits):
        lse = torch.logsumexp(logits.float(), dim=-1)
        return self.coef * lse.pow(2).mean()


def get_init_inputs():
    return [1e-4]


def get_inputs():
    return [torch.randn(8192, 32000, dtype=torch.bfloat16)]


def get_small_cases():
    return [[torch.randn(37, 101, dtype=torch.bfloat16)]]
