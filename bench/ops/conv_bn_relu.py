"""ResNet's 3x3 convolution block in bf16, NCHW: ``relu(batch_norm(conv3x3(x)))`` in eval mode.

The 64 -> 64 convolution of ResNet-50's first stage (3x3, stride 1, padding 1, no bias) at 56 x 56, followed by
batch norm with its running statistics (inference, or a frozen-BN fine-tune) and ReLU; a trained network's
statistics are not the identity, so the constructor draws them. Compute: ``2 * N * K * C * R * S * P * Q``
FLOPs (32 images: 7.4 GFLOP, 7.5 us at ~990 TFLOP/s dense bf16 on an H200). HBM floor: read x and the weight,
write y: ``(N*C*H*W + K*C*R*S + N*K*P*Q) * 2`` bytes (32 images: 25.8 MB, 6.0 us at 4.27 TB/s), so the compute
floor binds for the training shape; the single-image shape is launch-bound.
"""

import torch
from torch import nn

CHANNELS = 64


class Model(nn.Module):
    def __init__(self, in_channels: int = CHANNELS, out_channels: int = CHANNELS):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, stride=1, padding=1, bias=False, dtype=torch.bfloat16)
        self.bn = nn.BatchNorm2d(out_channels, dtype=torch.bfloat16)
        self.relu = nn.ReLU(inplace=True)
        with torch.no_grad():  # statistics of a trained network, not BatchNorm's identity initialisation
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.bn(self.conv(x)))


def get_init_inputs():
    return [CHANNELS, CHANNELS]


def _images(n, h, w):
    return torch.randn(n, CHANNELS, h, w, dtype=torch.bfloat16)


def get_inputs():
    return [_images(32, 56, 56)]


def get_cases():
    return [get_inputs(), [_images(1, 56, 56)]]


def get_small_cases():
    return [[_images(2, 9, 7)], [_images(1, 5, 12)]]


def hbm_bytes(x):
    n, c, h, w = x.shape
    return (n * c * h * w + CHANNELS * c * 9 + n * CHANNELS * h * w) * x.element_size()


def flops(x):
    n, c, h, w = x.shape
    return 2 * n * CHANNELS * c * 9 * h * w
