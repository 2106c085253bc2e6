"""Masked (causal) attention softmax in fp16: ``softmax(scores.masked_fill(mask, -inf), dim=-1)``.

``mask`` is a bool [1, 1, S, S] upper-triangular matrix broadcast over batch and heads (True = masked).
HBM floor: read the scores and write the probabilities (the mask is tiny and stays in L2):
``2 * B * H * S * S * 2`` bytes (4x16x1024x1024: 268 MB, 0.063 ms at 4.27 TB/s on an H200).
"""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)


def _causal(s: int) -> torch.Tensor:
    return torch.ones(s, s, dtype=torch.bool).triu(1)[None, None]


def _case(b: int, h: int, s: int):
    return [torch.randn(b, h, s, s, dtype=torch.float16), _causal(s)]


def get_init_inputs():
    return []


def get_inputs():
    return _case(4, 16, 1024)


def get_cases():
    return [_case(4, 16, 1024), _case(1, 32, 2048)]


def get_small_cases():
    return [_case(2, 2, 33), _case(1, 1, 97)]


def hbm_bytes(scores, mask):
    return 2 * scores.numel() * scores.element_size() + mask.numel()
