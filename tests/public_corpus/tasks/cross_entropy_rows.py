"""Cross-entropy per row over a large vocabulary: ``F.cross_entropy(logits.float(), target, reduction="none")``.

A variant of bench/ops/cross_entropy.py for libraries whose kernel returns the unreduced loss and leave the
mean to the caller (fla's cross_entropy_loss; Liger's reduction="none"). Logits are bf16 [tokens, vocab]; the
loss is fp32 [tokens]. HBM floor: read the logits and targets once, write one fp32 per row.
"""

import torch
import torch.nn.functional as F
from torch import nn


class Model(nn.Module):
    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.float(), target, reduction="none")


def _case(tokens: int, vocab: int):
    return [torch.randn(tokens, vocab, dtype=torch.bfloat16), torch.randint(0, vocab, (tokens,))]


def get_init_inputs():
    return []


def get_inputs():
    return _case(4096, 32000)


def get_cases():
    return [_case(4096, 32000), _case(1024, 128256)]


def get_small_cases():
    return [_case(37, 1000), _case(64, 4097)]


def hbm_bytes(logits, target):
    return logits.numel() * logits.element_size() + target.numel() * target.element_size() + target.numel() * 4
