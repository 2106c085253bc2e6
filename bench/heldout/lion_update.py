"""Lion optimizer update on a 2-D bf16 parameter with fp32 momentum: sign of interpolated momentum."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, lr: float = 1e-4, beta1: float = 0.9, beta2: float = 0.99, weight_decay: float = 0.1):
        super().__init__()
        self.lr, self.beta1, self.beta2, self.wd = lr, beta1, beta2, weight_decay

    def forward(self, p, g, m):
        gf = g.float()
        update = torch.sign(self.beta1 * m + (1 - self.beta1) * gf)
        new_p = (p.float() * (1 - self.lr * self.wd) - self.lr * update).to(p.dtype)
        new_m = self.beta2 * m + (1 - self.beta2) * gf
        return new_p, new_m


def get_init_inputs():
    return [1e-4, 0.9, 0.99, 0.1]


def _case(r, c):
    return [torch.randn(r, c, dtype=torch.bfloat16), torch.randn(r, c, dtype=torch.bfloat16), torch.randn(r, c) * 0.1]


def get_inputs():
    return _case(4096, 4096)


def get_small_cases():
    return [_case(37, 101)]
