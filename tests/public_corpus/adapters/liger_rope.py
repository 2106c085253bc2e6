"""Adapter: tests/public_corpus/tasks/rotary_qk.py (Hugging Face apply_rotary_pos_emb on q and k) through Liger's
LigerRopeFunction, as liger_kernel.transformers.liger_rotary_pos_emb calls it.

LigerRopeFunction rotates q and k in place whenever their [batch, seq, heads, head_dim] transpose is already
contiguous (a single kv head, say); in a Hugging Face model they are fresh projection outputs, so that is harmless
there. The task's inputs must stay unchanged, so the adapter hands Liger copies it owns."""
# ruff: noqa: F821 (the names come from the library source pasted above this adapter)

import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
        return LigerRopeFunction.apply(q.clone(), k.clone(), cos, sin, None, 1)
