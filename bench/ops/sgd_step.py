"""One SGD step with decoupled weight decay over a flat fp32 parameter buffer: ``p - lr * (g + wd * p)``.

Optimizers step over all parameters flattened into one buffer (67M elements: a 67M-parameter model, or
one shard of a larger one), so the op is 1-D and long: its launch must spread over the grid's x axis.
``lr`` and ``wd`` are constructor arguments read at call time. HBM floor: read p and g, write the new p:
``3 * n * 4`` bytes (2**26 elements: 805 MB, 0.19 ms at 4.27 TB/s on an H200).
"""

import torch
from torch import nn

N_TRAIN = 1 << 26
N_SMALL = 1 << 20


class Model(nn.Module):
    def __init__(self, lr: float = 1e-3, weight_decay: float = 0.01):
        super().__init__()
        self.lr = lr
        self.weight_decay = weight_decay

    def forward(self, p: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        return p - self.lr * (g + self.weight_decay * p)


def get_init_inputs():
    return [1e-3, 0.01]


def get_inputs():
    return [torch.randn(N_TRAIN), torch.randn(N_TRAIN)]


def get_cases():
    return [get_inputs(), [torch.randn(N_SMALL), torch.randn(N_SMALL)]]


def get_small_cases():
    return [[torch.randn(1000), torch.randn(1000)], [torch.randn(4097), torch.randn(4097)]]


def hbm_bytes(p, g):
    return 3 * p.numel() * p.element_size()
