"""relu(x @ W.T + b): a linear layer with a fused ReLU epilogue, fp32 (no TF32: tolerance is fp32's)."""

import torch
import torch.nn as nn

IN_FEATURES = 256
OUT_FEATURES = 200  # not a multiple of the usual tile sizes: the column mask matters


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]


def get_inputs():
    return [torch.randn(8192, IN_FEATURES)]


def get_cases():
    return [get_inputs(), [torch.randn(1000, IN_FEATURES)]]


def get_small_cases():
    return [[torch.randn(32, IN_FEATURES)], [torch.randn(45, IN_FEATURES)]]  # 45: a partial row tile


def hbm_bytes(x):
    m = x.shape[0]
    return 4 * (m * IN_FEATURES + IN_FEATURES * OUT_FEATURES + OUT_FEATURES + m * OUT_FEATURES)


def flops(x):
    return 2 * x.shape[0] * IN_FEATURES * OUT_FEATURES
