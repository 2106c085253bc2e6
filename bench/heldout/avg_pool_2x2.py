"""2x2 average pooling with stride 2 on NCHW fp16 (downsampling in ResNet-D shortcuts / UNet encoders)."""

import torch
import torch.nn.functional as F
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.avg_pool2d(x, kernel_size=2, stride=2)


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(32, 256, 112, 112, dtype=torch.float16)]


def get_small_cases():
    return [[torch.randn(2, 3, 33, 21, dtype=torch.float16)]]
