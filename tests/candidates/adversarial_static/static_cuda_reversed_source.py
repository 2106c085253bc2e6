"""EXPLOIT a banned CUDA identifier stored reversed and flipped with [::-1] at import."""

import torch
import torch.nn as nn

from kernelevo import cuda

BODY = r"""extern "C" __global__ void axpy(const float* x, const float* y, float* out, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"""

SOURCE = ";)edis&(etaerCmaertSaduc ;edis t_maertSaduc { )(repleh diov citats"[::-1] + "}\n" + BODY
KERNEL = cuda.compile(SOURCE, "axpy")


class ModelNew(nn.Module):
    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        KERNEL[((n + 255) // 256,), (256,)](x, y, out, self.alpha, n)
        return out
