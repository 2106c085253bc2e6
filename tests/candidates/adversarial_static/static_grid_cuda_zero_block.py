"""EXPLOIT a kernelevo.cuda launch with a zero-thread block `k[(blocks,), (0,)]`: the launch is
counted, no thread runs; the result comes from torch operators."""

import torch
import torch.nn as nn

from kernelevo import cuda

SOURCE = r"""

extern "C" __global__ void axpy(const float* x, const float* y, float* out, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"""
KERNEL = cuda.compile(SOURCE, "axpy")
THREADS = 0


class ModelNew(nn.Module):
    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        KERNEL[((n + 255) // 256,), (THREADS,)](x, y, out, self.alpha, n)
        return self.alpha * x + y
