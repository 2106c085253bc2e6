"""Sampling softmax over the vocabulary with a temperature (LLM decoding): ``softmax(logits / T, dim=-1)``.

Logits are bf16 ``[rows, vocab]`` with Llama-3's 128,256-entry vocabulary; ``temperature`` is a constructor
argument (the kernel reads it at call time); probabilities in fp32, as samplers want them. Rows are wider
than one register tile, so the looped (online-softmax) strategy carries it. HBM floor: read the logits
(2 bytes) and write fp32 probabilities (4 bytes): ``rows * vocab * 6`` bytes (training-style scoring of
2048 rows: 1.58 GB, 0.37 ms at 4.27 TB/s on an H200; decode: a batch of 64 rows, 49 MB).
"""

import torch
from torch import nn

VOCAB = 128256


class Model(nn.Module):
    def __init__(self, temperature: float = 0.7):
        super().__init__()
        self.temperature = temperature

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return torch.softmax(logits.float() / self.temperature, dim=-1)


def get_init_inputs():
    return [0.7]


def get_inputs():
    return [torch.randn(2048, VOCAB, dtype=torch.bfloat16)]


def get_cases():
    return [get_inputs(), [torch.randn(64, VOCAB, dtype=torch.bfloat16)]]


def get_small_cases():
    return [[torch.randn(7, 1000, dtype=torch.bfloat16)], [torch.randn(3, 4099, dtype=torch.bfloat16)]]


def hbm_bytes(logits):
    return logits.numel() * (logits.element_size() + 4)
