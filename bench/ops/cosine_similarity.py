"""Cosine similarity of paired bf16 embeddings along the last dim (retrieval / contrastive heads):
``F.cosine_similarity(a, b, dim=-1, eps)`` with ``eps`` a constructor argument; norms in fp32.

Traced as ``aten.linalg_vector_norm`` per row (two row norms and a row dot product). HBM floor: read a
and b, write one value per row: ``2 * rows * dim * 2 + rows * 2`` bytes (65536 x 1024: 268 MB, 0.063
ms at 4.27 TB/s on an H200). The decode shape scores 256 queries.
"""

import torch
import torch.nn.functional as F
from torch import nn

DIM = 1024


class Model(nn.Module):
    def __init__(self, eps: float = 1e-8):
        super().__init__()
        self.eps = eps

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.cosine_similarity(a.float(), b.float(), dim=-1, eps=self.eps).to(a.dtype)


def get_init_inputs():
    return [1e-8]


def get_inputs():
    return [torch.randn(65536, DIM, dtype=torch.bfloat16), torch.randn(65536, DIM, dtype=torch.bfloat16)]


def get_cases():
    return [get_inputs(), [torch.randn(256, DIM, dtype=torch.bfloat16), torch.randn(256, DIM, dtype=torch.bfloat16)]]


def get_small_cases():
    return [[torch.randn(37, 123, dtype=torch.bfloat16), torch.randn(37, 123, dtype=torch.bfloat16)],
            [torch.randn(5, DIM, dtype=torch.bfloat16), torch.randn(5, DIM, dtype=torch.bfloat16)]]


def hbm_bytes(a, b):
    rows = a.numel() // a.shape[-1]
    return 2 * a.numel() * a.element_size() + rows * a.element_size()
