"""Sentence-embedding mean pooling: average fp16 token states over the sequence dim where attention_mask == 1."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        m = attention_mask.unsqueeze(-1).to(hidden.dtype)
        summed = (hidden * m).sum(dim=1)
        count = m.sum(dim=1).clamp(min=1e-9)
        return summed / count


def _case(b, t, d):
    lengths = torch.randint(1, t + 1, (b,))
    mask = (torch.arange(t)[None, :] < lengths[:, None]).to(torch.int64)
    return [torch.randn(b, t, d, dtype=torch.float16), mask]


def get_init_inputs():
    return []


def get_inputs():
    return _case(256, 512, 768)


def get_small_cases():
    return [_case(3, 37, 33)]
