"""Rotary position embedding on a query/key pair, Hugging Face Llama ``apply_rotary_pos_emb`` form, in bf16.

A variant of bench/ops/rotary.py for libraries whose RoPE rotates q and k together (Liger-Kernel's
LigerRopeFunction): q [batch, q_heads, seq, head_dim], k [batch, kv_heads, seq, head_dim] (grouped-query
attention: fewer kv heads), cos/sin [1, seq, head_dim] = cat(freqs, freqs), broadcast over batch and heads;
returns (q_embed, k_embed). Same math as bench/ops/rotary.py, per tensor.
HBM floor: read and write q and k once.
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
    def forward(self, q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
        cos = cos.unsqueeze(1)
        sin = sin.unsqueeze(1)
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def _case(b: int, hq: int, hkv: int, s: int, d: int):
    inv_freq = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
    offset = int(torch.randint(0, 8192, ()))  # where in the sequence these positions start
    freqs = torch.outer(torch.arange(offset, offset + s).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)[None]
    return [torch.randn(b, hq, s, d, dtype=torch.bfloat16), torch.randn(b, hkv, s, d, dtype=torch.bfloat16),
            emb.cos().bfloat16(), emb.sin().bfloat16()]


def get_init_inputs():
    return []


def get_inputs():
    return _case(4, 32, 8, 2048, 128)


def get_cases():
    return [_case(4, 32, 8, 2048, 128), _case(1, 8, 8, 4096, 64)]


def get_small_cases():
    return [_case(2, 3, 1, 7, 64), _case(1, 4, 2, 33, 32)]


def hbm_bytes(q, k, cos, sin):
    return 2 * (q.numel() + k.numel()) * q.element_size() + 2 * cos.numel() * cos.element_size()
