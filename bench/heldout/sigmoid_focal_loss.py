"""Sigmoid focal loss (RetinaNet, torchvision.ops.sigmoid_focal_loss) with mean reduction."""

import torch
import torch.nn.functional as F
from torch import nn

KEEP_INPUTS = ("targets",)  # binary 0/1 targets


class Model(nn.Module):
    def __init__(self, alpha: float = 0.25, gamma: float = 2.0):
        super().__init__()
        self.alpha, self.gamma = alpha, gamma

    def forward(self, logits, targets):
        p = torch.sigmoid(logits)
        ce = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
        p_t = p * targets + (1 - p) * (1 - targets)
        loss = ce * ((1 - p_t) ** self.gamma)
        alpha_t = self.alpha * targets + (1 - self.alpha) * (1 - targets)
        return (alpha_t * loss).mean()


def _case(n, c):
    return [torch.randn(n, c), (torch.rand(n, c) < 0.05).float()]


def get_init_inputs():
    return [0.25, 2.0]


def get_inputs():
    return _case(65536, 80)


def get_small_cases():
    return [_case(37, 81)]
