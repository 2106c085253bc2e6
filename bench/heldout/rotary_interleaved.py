"""Rotary embedding with interleaved (even/odd) pairs, GPT-J / Meta-Llama reference style, bf16."""

import torch
from torch import nn

KEEP_INPUTS = ("cos", "sin")


class Model(nn.Module):
    def forward(self, x, cos, sin):
        # x [b, s, h, d]; cos/sin [s, d/2]
        x1 = x[..., 0::2]
        x2 = x[..., 1::2]
        c = cos[None, :, None, :]
        s = sin[None, :, None, :]
        o1 = x1 * c - x2 * s
        o2 = x1 * s + x2 * c
        return torch.stack((o1, o2), dim=-1).flatten(-2)


def _case(b, s, h, d):
    inv_freq = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
    offset = int(torch.randint(0, 8192, ()))
    freqs = torch.outer(torch.arange(offset, offset + s).float(), inv_freq)
    return [torch.randn(b, s, h, d, dtype=torch.bfloat16), freqs.cos().bfloat16(), freqs.sin().bfloat16()]


def get_init_inputs():
    return []


def get_inputs():
    return _case(4, 2048, 32, 128)


def get_small_cases():
    return [_case(2, 37, 3, 32)]
