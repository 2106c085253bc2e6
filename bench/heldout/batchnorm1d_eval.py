"""BatchNorm1d in eval mode on [B, C, L] (audio / 1-D conv nets), running statistics as buffers."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, channels: int = 512):
        super().__init__()
        self.bn = nn.BatchNorm1d(channels)
        with torch.no_grad():
            self.bn.running_mean.normal_(0.0, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.weight.normal_(1.0, 0.1)
            self.bn.bias.normal_(0.0, 0.1)
        self.eval()

    def forward(self, x):
        return self.bn(x)


def get_init_inputs():
    return [80]


def get_inputs():
    return [torch.randn(32, 80, 3000)]


def get_small_cases():
    return [[torch.randn(3, 80, 33)]]
