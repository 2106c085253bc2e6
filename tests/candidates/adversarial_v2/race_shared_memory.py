"""Racy RMSNorm: warp 0 reads the other warps' partial sums without waiting for them (no __syncthreads()
between the writes and the read). Usually right, sometimes not: compute-sanitizer racecheck sees the hazard."""

import torch
import torch.nn as nn

from kernelevo import cuda

RMSNORM_SRC = r"""
extern "C" __global__ void rmsnorm_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                          float* __restrict__ out, int n_cols, float eps) {
    __shared__ float warp_sums[32];
    const float* xr = x + (long long)blockIdx.x * n_cols;
    float* outr = out + (long long)blockIdx.x * n_cols;
    float acc = 0.0f;
    for (int c = threadIdx.x; c < n_cols; c += blockDim.x) {
        float v = xr[c];
        acc += v * v;
    }
    for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_down_sync(0xffffffff, acc, offset);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = acc;
    if (warp == 0) {
        int n_warps = (blockDim.x + 31) >> 5;
        acc = lane < n_warps ? warp_sums[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_down_sync(0xffffffff, acc, offset);
        if (lane == 0) warp_sums[0] = rsqrtf(acc / n_cols + eps);
    }
    __syncthreads();
    float inv_rms = warp_sums[0];
    for (int c = threadIdx.x; c < n_cols; c += blockDim.x) outr[c] = xr[c] * inv_rms * w[c];
}
"""


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))
        self.kernel = cuda.compile(RMSNORM_SRC, "rmsnorm_kernel")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        self.kernel[n_rows, 256](x2, self.weight.contiguous(), out, n_cols, float(self.eps))
        return out.view(x.shape)
