"""Honest softmax through torch.utils.cpp_extension.load_inline (GPU only; the build takes ~30-60 s).

The launch passes PyTorch's current stream as the fourth launch parameter, as the verifier requires.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor softmax_rows(torch::Tensor x);"

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void softmax_rows_kernel(const float* __restrict__ x, float* __restrict__ out, int n_cols) {
    __shared__ float red[32];
    const float* xr = x + (long long)blockIdx.x * n_cols;
    float* outr = out + (long long)blockIdx.x * n_cols;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = (blockDim.x + 31) >> 5;

    float m = -INFINITY;
    for (int c = threadIdx.x; c < n_cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_down_sync(0xffffffff, m, o));
    if (lane == 0) red[warp] = m;
    __syncthreads();
    if (warp == 0) {
        m = lane < n_warps ? red[lane] : -INFINITY;
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_down_sync(0xffffffff, m, o));
        if (lane == 0) red[0] = m;
    }
    __syncthreads();
    float row_max = red[0];
    __syncthreads();

    float s = 0.0f;
    for (int c = threadIdx.x; c < n_cols; c += blockDim.x) s += expf(xr[c] - row_max);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffff, s, o);
    if (lane == 0) red[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < n_warps ? red[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffff, s, o);
        if (lane == 0) red[0] = s;
    }
    __syncthreads();
    float inv = 1.0f / red[0];
    for (int c = threadIdx.x; c < n_cols; c += blockDim.x) outr[c] = expf(xr[c] - row_max) * inv;
}

torch::Tensor softmax_rows(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.dtype() == torch::kFloat32 && x.dim() == 2, "expected a 2-D fp32 CUDA tensor");
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    int rows = xc.size(0), cols = xc.size(1);
    auto stream = at::cuda::getCurrentCUDAStream();
    softmax_rows_kernel<<<rows, 256, 0, stream>>>(xc.data_ptr<float>(), out.data_ptr<float>(), cols);
    return out;
}
"""

_ext = load_inline(
    name="kernelevo_suite_softmax_rows",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["softmax_rows"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1])
        return _ext.softmax_rows(x2).view(x.shape)
