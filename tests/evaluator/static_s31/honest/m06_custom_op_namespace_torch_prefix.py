"""Minimal: a custom op registered under the candidate's own namespace ``torchkernels`` (not PyTorch's; the name
merely starts with "torch")."""
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _gelu_tanh_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    y = 0.5 * x * (1.0 + (2.0 * tl.sigmoid(2.0 * inner) - 1.0))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=m)


@torch.library.custom_op("torchkernels::gelu_tanh", mutates_args=())
def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    xc = x.contiguous()
    y = torch.empty_like(xc)
    n = xc.numel()
    _gelu_tanh_kernel[(triton.cdiv(n, 1024),)](xc, y, n, BLOCK=1024)
    return y


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return gelu_tanh(x)
