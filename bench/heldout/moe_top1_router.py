"""Switch-Transformer top-1 router: bias-free gate Linear on bf16 tokens, fp32 softmax, max prob + argmax expert."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, d_model: int = 1024, num_experts: int = 8):
        super().__init__()
        self.gate = nn.Linear(d_model, num_experts, bias=False, dtype=torch.bfloat16)

    def forward(self, x: torch.Tensor):
        logits = self.gate(x).float()
        probs = torch.softmax(logits, dim=-1)
        gate_prob, expert = probs.max(dim=-1)
        return gate_prob, expert


def get_init_inputs():
    return [1024, 8]


def get_inputs():
    return [torch.randn(16384, 1024, dtype=torch.bfloat16)]


def get_small_cases():
    return [[torch.randn(37, 1024, dtype=torch.bfloat16)]]
