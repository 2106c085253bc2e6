"""CLIP-style paired cosine score: L2-normalise two fp16 embedding batches, then row-wise dot product."""

import torch
import torch.nn.functional as F
from torch import nn


class Model(nn.Module):
    def forward(self, image_emb: torch.Tensor, text_emb: torch.Tensor) -> torch.Tensor:
        a = F.normalize(image_emb, dim=-1)
        b = F.normalize(text_emb, dim=-1)
        return (a * b).sum(dim=-1)


def get_init_inputs():
    return []


def _case(n, d):
    return [torch.randn(n, d, dtype=torch.float16), torch.randn(n, d, dtype=torch.float16)]


def get_inputs():
    return _case(32768, 768)


def get_small_cases():
    return [_case(37, 65)]
