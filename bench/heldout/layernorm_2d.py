"""LayerNorm over the last two dims (normalized_shape=(H, W)) with elementwise affine, fp32 feature maps."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, h: int = 32, w: int = 32):
        super().__init__()
        self.ln = nn.LayerNorm((h, w))
        with torch.no_grad():
            self.ln.weight.normal_(1.0, 0.1)
            self.ln.bias.normal_(0.0, 0.1)

    def forward(self, x):
        return self.ln(x)


def get_init_inputs():
    return [32, 32]


def get_inputs():
    return [torch.randn(64, 256, 32, 32)]


def get_small_cases():
    return [[torch.randn(2, 3, 32, 32)]]
