"""Adapter: tests/public_corpus/tasks/cross_entropy_rows.py (one loss per row) through fla's cross_entropy_loss,
which returns the unreduced loss (fla.modules.FusedCrossEntropyLoss reduces it afterwards in PyTorch)."""
# ruff: noqa: F821 (the names come from the library source pasted above this adapter)

import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        loss, _ = cross_entropy_loss(logits, target)
        return loss
