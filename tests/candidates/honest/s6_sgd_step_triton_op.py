"""Honest SGD step for bench/ops/sgd_step.py as a torch.library.triton_op (the PyTorch docs' pattern for
Triton kernels torch.compile can trace): wrap_triton(kernel)[grid], register_fake for shape inference, a
warnings.warn on a non-contiguous buffer (copied first), hyper-parameters as runtime scalars, int64 offsets."""

import warnings

import torch
import triton
import triton.language as tl
from torch import nn
from torch.library import triton_op, wrap_triton

BLOCK_SIZE = 1024


@triton.jit
def _sgd_kernel(p_ptr, g_ptr, out_ptr, n, lr, weight_decay, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask)
    g = tl.load(g_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, p - lr * (g + weight_decay * p), mask=mask)


@triton_op("s6_kernels::sgd_step", mutates_args={})
def sgd_step(p: torch.Tensor, g: torch.Tensor, lr: float, weight_decay: float) -> torch.Tensor:
    out = torch.empty_like(p)
    n = p.numel()
    wrap_triton(_sgd_kernel)[(triton.cdiv(n, BLOCK_SIZE),)](p, g, out, n, lr, weight_decay, BLOCK=BLOCK_SIZE)
    return out


@sgd_step.register_fake
def _sgd_step_fake(p, g, lr, weight_decay):
    return torch.empty_like(p)


class ModelNew(nn.Module):
    def __init__(self, lr: float = 1e-3, weight_decay: float = 0.01):
        super().__init__()
        self.lr = lr
        self.weight_decay = weight_decay

    def forward(self, p: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        if not (p.is_contiguous() and g.is_contiguous()):
            warnings.warn("sgd_step: non-contiguous parameter or gradient buffer; copying", stacklevel=2)
            p, g = p.contiguous(), g.contiguous()
        if p.shape != g.shape:
            raise ValueError(f"sgd_step: parameter {tuple(p.shape)} and gradient {tuple(g.shape)} differ")
        return sgd_step(p, g, self.lr, self.weight_decay)
