"""1x1 convolution (channel mixing, as in ConvNeXt / UNet heads) with bias, then GELU; fp16 NCHW."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, cin: int = 256, cout: int = 512):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel_size=1, bias=True, dtype=torch.float16)
        self.act = nn.GELU()

    def forward(self, x):
        return self.act(self.conv(x))


def get_init_inputs():
    return [64, 128]


def get_inputs():
    return [torch.randn(16, 64, 64, 64, dtype=torch.float16)]


def get_small_cases():
    return [[torch.randn(2, 64, 5, 7, dtype=torch.float16)]]
