"""Rotary position embedding (GPT-NeoX / Llama ``rotate_half`` form) in bf16.

``out = x * cos + rotate_half(x) * sin`` with x [batch, seq, heads, head_dim] and cos/sin
[seq, head_dim] broadcast over batch and heads. HBM floor: read x and write out (cos/sin are
shared by all heads and stay in L2): ``2 * x.numel() * 2`` bytes (4x2048x32x128: 134 MB,
0.031 ms at 4.27 TB/s on an H200).
"""

import torch
from torch import nn


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


# The rotation tables are cat(freqs, freqs).cos()/.sin(), as models build them (kernels read one half):
# they keep this draw under every input distribution (q/k/x still cover the op's domain), and change with the
# seed through the positions' offset (a decode step at some cache length), so no kernel can assume them.
KEEP_INPUTS = ("cos", "sin")


class Model(nn.Module):
    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        cos = cos[None, :, None, :]
        sin = sin[None, :, None, :]
        return x * cos + rotate_half(x) * sin


def _case(b: int, s: int, h: int, d: int):
    inv_freq = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
    offset = int(torch.randint(0, 8192, ()))  # where in the sequence these positions start
    freqs = torch.outer(torch.arange(offset, offset + s).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return [torch.randn(b, s, h, d, dtype=torch.bfloat16), emb.cos().bfloat16(), emb.sin().bfloat16()]


def get_init_inputs():
    return []


def get_inputs():
    return _case(4, 2048, 32, 128)


def get_cases():
    return [_case(4, 2048, 32, 128), _case(1, 4096, 8, 64)]


def get_small_cases():
    return [_case(2, 7, 3, 64), _case(1, 9, 4, 32)]


def hbm_bytes(x, cos, sin):
    return 2 * x.numel() * x.element_size() + cos.numel() * cos.element_size() * 2
