"""Label-smoothed cross entropy (0.1) over bf16 logits upcast to fp32, int64 targets, mean reduction."""

import torch
import torch.nn.functional as F
from torch import nn


class Model(nn.Module):
    def __init__(self, smoothing: float = 0.1):
        super().__init__()
        self.smoothing = smoothing

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.float(), target, label_smoothing=self.smoothing)


def get_init_inputs():
    return [0.1]


def _case(n, v):
    return [torch.randn(n, v, dtype=torch.bfloat16) * 2, torch.randint(0, v, (n,), dtype=torch.int64)]


def get_inputs():
    return _case(4096, 32000)


def get_small_cases():
    return [_case(37, 129)]
