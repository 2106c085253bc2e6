"""Fake-quantise to an fp8-e4m3-like range with a per-tensor scale: ``(x / s).round().clamp(-448, 448) * s``."""

import torch
from torch import nn

KEEP_INPUTS = ("s",)  # a positive per-tensor scale


class Model(nn.Module):
    def forward(self, x, s):
        return (x / s).round().clamp(-448, 448) * s


def _case(*shape):
    return [torch.randn(*shape) * 100, torch.rand(()) * 0.5 + 0.25]


def get_init_inputs():
    return []


def get_inputs():
    return _case(8, 2048, 4096)


def get_small_cases():
    return [_case(3, 37, 33)]
