import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, head_dim: int):
        super().__init__()
        self.scale = head_dim ** -0.5

    def forward(self, q, k):
        return torch.matmul(q, k.transpose(-1, -2)) * self.scale


def get_init_inputs():
    return [128]


def get_inputs():
    return [torch.randn(4, 32, 1024, 128, dtype=torch.float16), torch.randn(4, 32, 1024, 128, dtype=torch.float16)]


def get_small_cases():
    return [[torch.randn(2, 3, 37, 128, dtype=torch.float16), torch.randn(2, 3, 45, 128, dtype=torch.float16)]]
