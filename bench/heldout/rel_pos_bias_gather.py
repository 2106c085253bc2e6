"""Swin / T5-style relative position bias: gather a learned [num_rel, heads] table with an index buffer,
permute to [heads, N, N] and add to attention scores [B, heads, N, N]."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, window: int = 7, heads: int = 8):
        super().__init__()
        n = window * window
        self.heads = heads
        self.table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads) * 0.02)
        coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (window - 1)
        index = rel[..., 0] * (2 * window - 1) + rel[..., 1]
        self.register_buffer("index", index.reshape(-1), persistent=False)
        self.n = n

    def forward(self, scores):
        bias = self.table[self.index].view(self.n, self.n, self.heads).permute(2, 0, 1)
        return scores + bias.unsqueeze(0)


def get_init_inputs():
    return [7, 3]


def get_inputs():
    return [torch.randn(1024, 3, 49, 49)]


def get_small_cases():
    return [[torch.randn(2, 3, 49, 49)]]
