"""Knowledge-distillation loss: KL(teacher || student) between temperature log-softmaxes, batchmean, times T^2."""

import torch
import torch.nn.functional as F
from torch import nn


class Model(nn.Module):
    def __init__(self, temperature: float = 2.0):
        super().__init__()
        self.t = temperature

    def forward(self, student_logits: torch.Tensor, teacher_logits: torch.Tensor) -> torch.Tensor:
        log_p_s = F.log_softmax(student_logits / self.t, dim=-1)
        log_p_t = F.log_softmax(teacher_logits / self.t, dim=-1)
        return F.kl_div(log_p_s, log_p_t, reduction="batchmean", log_target=True) * (self.t ** 2)


def get_init_inputs():
    return [2.0]


def _case(n, c):
    return [torch.randn(n, c), torch.randn(n, c)]


def get_inputs():
    return _case(256, 1000)


def get_small_cases():
    return [_case(37, 101)]
