"""Weighted sum of K embeddings per sample (recsys multi-hot pooling / attention pooling):
``einsum('bk,bkd->bd', w, e)`` in bf16."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, w, e):
        return torch.einsum("bk,bkd->bd", w, e)


def _case(b, k, d):
    return [torch.rand(b, k, dtype=torch.bfloat16), torch.randn(b, k, d, dtype=torch.bfloat16)]


def get_init_inputs():
    return []


def get_inputs():
    return _case(8192, 32, 256)


def get_small_cases():
    return [_case(37, 5, 33)]
