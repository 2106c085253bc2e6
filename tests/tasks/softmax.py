"""Row softmax over the last dimension, fp32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(4096, 4096)]


def get_cases():
    return [get_inputs(), [torch.randn(8192, 1000)], [torch.randn(97, 8191)]]


def get_small_cases():
    # 128 columns (a power of two), 97 (odd, below a block), 1025 (just over a power of two).
    return [[torch.randn(16, 128)], [torch.randn(13, 97)], [torch.randn(6, 1025)]]


def hbm_bytes(x):
    return 2 * x.numel() * x.element_size()


def flops(x):
    return 4 * x.numel()
