"""Adapter: bench/ops/rotary.py (x [batch, seq, heads, head_dim], rotate_half form) through fla's
rotary_embedding, as fla.modules.RotaryEmbedding calls it. fla takes the non-duplicated cos/sin cache
[seq, head_dim / 2] (the flash-attn convention); the task's cache is cat(freqs, freqs), so its first half is it."""
# ruff: noqa: F821 (the names come from the library source pasted above this adapter)

import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        half = cos.shape[-1] // 2
        return rotary_embedding(x, cos[:, :half], sin[:, :half], interleaved=False, inplace=False)
