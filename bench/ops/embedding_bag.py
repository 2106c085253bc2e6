"""Embedding bag (sum of the table rows each bag names), bf16 table of 32k x 1024: ``weight[idx].sum(1)``.

A gather of table rows by an int64 index tensor ``[bags, bag_size]``, reduced over the bag (recommendation
models, bag-of-tokens features). HBM floor: read each named row once, the indices, and write one row per
bag: ``bags * (bag_size * 1024 * 2 + bag_size * 8 + 1024 * 2)`` bytes (training: 8192 bags of 16, 286 MB,
0.067 ms at 4.27 TB/s on an H200; decode: 512 bags of 4, 5.2 MB: launch-bound). Rows named twice are
counted twice (uniform indices over 32k rows rarely repeat within a case).
"""

import torch
from torch import nn

VOCAB, DIM = 32000, 1024


class Model(nn.Module):
    def __init__(self, vocab: int = VOCAB, dim: int = DIM):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim, dtype=torch.bfloat16)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.embedding(idx).sum(1)


def get_init_inputs():
    return [VOCAB, DIM]


def _bags(n: int, size: int):
    return [torch.randint(0, VOCAB, (n, size), dtype=torch.int64)]


def get_inputs():
    return _bags(8192, 16)


def get_cases():
    return [_bags(8192, 16), _bags(512, 4)]


def get_small_cases():
    return [_bags(13, 16), _bags(5, 3)]


def hbm_bytes(idx):
    bags, size = idx.shape
    return bags * (size * DIM * 2 + size * idx.element_size() + DIM * 2)
