"""Cross-entropy over a large vocabulary: ``F.cross_entropy(logits.float(), target)`` (mean over rows).

Logits are bf16 [tokens, vocab]; the loss is a fp32 scalar. HBM floor: read the logits once
(plus the int64 targets): ``tokens * vocab * 2 + tokens * 8`` bytes (4096 x 32000: 262 MB,
0.061 ms at 4.27 TB/s on an H200).
"""

import torch
import torch.nn.functional as F
from torch import nn


class Model(nn.Module):
    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.float(), target)


def _case(tokens: int, vocab: int):
    return [torch.randn(tokens, vocab, dtype=torch.bfloat16), torch.randint(0, vocab, (tokens,))]


def get_init_inputs():
    return []


def get_inputs():
    return _case(4096, 32000)


def get_cases():
    return [_case(4096, 32000), _case(1024, 128256)]


def get_small_cases():
    return [_case(13, 1000), _case(9, 4097)]


def hbm_bytes(logits, target):
    return logits.numel() * logits.element_size() + target.numel() * target.element_size()
