"""Smooth-L1 (Huber-style) box regression loss with beta=1/9 (Detectron), mean reduction, fp32."""

import torch
import torch.nn.functional as F
from torch import nn


class Model(nn.Module):
    def __init__(self, beta: float = 1.0 / 9.0):
        super().__init__()
        self.beta = beta

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.smooth_l1_loss(pred, target, beta=self.beta, reduction="mean")


def get_init_inputs():
    return [1.0 / 9.0]


def _case(n):
    return [torch.randn(n, 4) * 0.5, torch.randn(n, 4) * 0.5]


def get_inputs():
    return _case(512 * 256)


def get_small_cases():
    return [_case(1033)]
