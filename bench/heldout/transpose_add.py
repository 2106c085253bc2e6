import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x, y):
        return x.transpose(1, 2) + y


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(32, 1024, 2048), torch.randn(32, 2048, 1024)]


def get_small_cases():
    return [[torch.randn(3, 37, 65), torch.randn(3, 65, 37)]]
