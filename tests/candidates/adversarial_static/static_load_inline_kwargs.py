"""EXPLOIT load_inline called with **options: the source expression is hidden in a dict, so a checker
that reads the cuda_sources= keyword scans nothing (the source itself is assembled so no constant holds
`__global__`, and it creates a side stream)."""

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = "torch::Tensor scale(torch::Tensor x, double a);"
CUDA = (
    "#include <torch/extension.h>\n__glo" + "bal__ void k(float* p) { }\n"
    + "torch::Tensor scale(torch::Tensor x, double a) { cudaStream_t s; cudaStreamCre" + "ate(&s); return x; }"
)
OPTIONS = {"name": "scale_ext", "cpp_sources": [CPP], "cuda_sources": [CUDA], "functions": ["scale"]}
EXT = load_inline(**OPTIONS)


class ModelNew(nn.Module):
    def forward(self, x):
        return EXT.scale(x, 1.0)
