"""EXPLOIT persisting-L2 carve-out (GPU, load_inline): pin the inputs in L2 so cache flushes miss them.

The host code sets cudaLimitPersistingL2CacheSize and a stream accessPolicyWindow over x before the
launch (llm.c PR #851 reported bandwidth above HBM peak this way).
"""

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = "torch::Tensor axpy_l2(torch::Tensor x, torch::Tensor y, double alpha);"

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void axpy_kernel(const float* x, const float* y, float* out, float alpha, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = alpha * x[i] + y[i];
}

torch::Tensor axpy_l2(torch::Tensor x, torch::Tensor y, double alpha) {
    auto out = torch::empty_like(x);
    long n = x.numel();
    auto stream = at::cuda::getCurrentCUDAStream();
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 64 << 20);
    cudaStreamAttrValue attr = {};
    attr.accessPolicyWindow.base_ptr = x.data_ptr();
    attr.accessPolicyWindow.num_bytes = std::min<size_t>(n * sizeof(float), 64 << 20);
    attr.accessPolicyWindow.hitRatio = 1.0f;
    attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr);
    axpy_kernel<<<(n + 255) / 256, 256, 0, stream>>>(x.data_ptr<float>(), y.data_ptr<float>(),
                                                    out.data_ptr<float>(), (float)alpha, n);
    return out;
}
"""

_ext = load_inline(name="kernelevo_suite_axpy_l2", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC,
                   functions=["axpy_l2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y):
        return _ext.axpy_l2(x.contiguous(), y.contiguous(), self.alpha)
