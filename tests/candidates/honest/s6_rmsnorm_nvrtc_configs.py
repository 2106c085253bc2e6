"""Honest fp32 RMSNorm for tests/tasks/rmsnorm.py in CUDA C++ through kernelevo.cuda (NVRTC): the source is
an f-string template whose block size comes in as ``#define THREADS {threads:d}``, a dict of per-width thread
counts picks it, the compiled kernels are cached per block size with functools.lru_cache and kept on the module;
a block per row with a shared-memory tree reduction."""

import functools

import torch
from torch import nn

from kernelevo import cuda

CONFIGS = {256: 128, 1024: 256, 4096: 512}  # row width up to -> threads per block (powers of two)


def rmsnorm_source(threads: int) -> str:
    return f"""
#define THREADS {threads:d}
extern "C" __global__ void rmsnorm_block(const float* __restrict__ x, const float* __restrict__ w,
                                         float* __restrict__ y, int n_cols, float eps) {{
    __shared__ float partial[THREADS];
    const float* row = x + (long long)blockIdx.x * n_cols;
    float acc = 0.f;
    for (int c = threadIdx.x; c < n_cols; c += THREADS) {{
        float v = row[c];
        acc += v * v;
    }}
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {{
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }}
    float inv_rms = rsqrtf(partial[0] / n_cols + eps);
    float* out = y + (long long)blockIdx.x * n_cols;
    for (int c = threadIdx.x; c < n_cols; c += THREADS) out[c] = row[c] * inv_rms * w[c];
}}
"""


def threads_for(n_cols: int) -> int:
    for width, threads in sorted(CONFIGS.items()):
        if n_cols <= width:
            return threads
    return max(CONFIGS.values())


@functools.lru_cache(maxsize=8)
def compiled_rmsnorm(threads: int):
    return cuda.compile(rmsnorm_source(threads), "rmsnorm_block")


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))
        self.threads = threads_for(hidden)
        self.kernel = compiled_rmsnorm(self.threads)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        y = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        self.kernel[n_rows, self.threads](x2, self.weight, y, n_cols, float(self.eps))
        return y.view(x.shape)
