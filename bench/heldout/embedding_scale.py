import math

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, vocab: int, dim: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.scale = math.sqrt(dim)

    def forward(self, ids):
        return self.embed(ids) * self.scale


def get_init_inputs():
    return [32000, 2048]


def get_inputs():
    return [torch.randint(0, 32000, (8, 1024))]


def get_small_cases():
    return [[torch.randint(0, 32000, (3, 17))]]
