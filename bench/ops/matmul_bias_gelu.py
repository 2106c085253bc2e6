"""Linear layer with a fused bias + tanh-GELU epilogue in fp16: ``gelu(x @ W.T + b, "tanh")``.

The GPT-2 (small) MLP up-projection, 768 -> 3072 with tanh-GELU, over 8192 tokens. Compute:
``2 * M * K * N`` FLOPs (8192 x 768 x 3072: 38.7 GFLOP, 0.039 ms at ~990 TFLOP/s dense fp16 on an
H200). HBM floor: read x and W, write y: ``(M*K + N*K + M*N) * 2`` bytes (8192 x 768 x 3072:
68 MB, 0.016 ms at 4.27 TB/s), so the compute floor binds.
"""

import torch
import torch.nn.functional as F
from torch import nn

IN_FEATURES = 768
OUT_FEATURES = 3072


class Model(nn.Module):
    def __init__(self, in_features: int = IN_FEATURES, out_features: int = OUT_FEATURES):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features, dtype=torch.float16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.proj(x), approximate="tanh")


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]


def get_inputs():
    return [torch.randn(8192, IN_FEATURES, dtype=torch.float16)]


def get_cases():
    return [get_inputs(), [torch.randn(1024, IN_FEATURES, dtype=torch.float16)]]


def get_small_cases():
    return [[torch.randn(37, IN_FEATURES, dtype=torch.float16)]]


def hbm_bytes(x):
    m, k = x.shape
    return (m * k + OUT_FEATURES * k + m * OUT_FEATURES) * 2


def flops(x):
    m, k = x.shape
    return 2 * m * k * OUT_FEATURES
