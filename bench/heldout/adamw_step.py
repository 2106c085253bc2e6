"""One AdamW step on a 2-D fp32 parameter (decoupled weight decay, bias correction at step t)."""

import torch
from torch import nn

KEEP_INPUTS = ("v",)  # second moment is non-negative (sqrt)


class Model(nn.Module):
    def __init__(self, lr: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8,
                 weight_decay: float = 0.1, step: int = 10):
        super().__init__()
        self.lr, self.beta1, self.beta2, self.eps, self.wd = lr, beta1, beta2, eps, weight_decay
        self.bc1 = 1 - beta1 ** step
        self.bc2 = 1 - beta2 ** step

    def forward(self, p, g, m, v):
        m = self.beta1 * m + (1 - self.beta1) * g
        v = self.beta2 * v + (1 - self.beta2) * g * g
        denom = (v / self.bc2).sqrt() + self.eps
        p = p * (1 - self.lr * self.wd) - self.lr * (m / self.bc1) / denom
        return p, m, v


def get_init_inputs():
    return [1e-3, 0.9, 0.999, 1e-8, 0.1, 10]


def _case(r, c):
    return [torch.randn(r, c), torch.randn(r, c), torch.randn(r, c) * 0.1, torch.rand(r, c) * 0.01]


def get_inputs():
    return _case(4096, 11008)


def get_small_cases():
    return [_case(37, 101)]
