"""Honest softmax registered as a PyTorch custom operator (torch.library.custom_op with a register_fake
companion, the pattern PyTorch documents for Triton kernels); forward calls it through torch.ops."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_rows(x_ptr, out_ptr, n_cols, x_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=mask)


@torch.library.custom_op("kernelevo_demo::softmax_lastdim", mutates_args=())
def softmax_lastdim(x: torch.Tensor) -> torch.Tensor:
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    out = torch.empty_like(x2)
    n_rows, n_cols = x2.shape
    _softmax_rows[(n_rows,)](x2, out, n_cols, x2.stride(0), out.stride(0), BLOCK=triton.next_power_of_2(n_cols))
    return out.view(x.shape)


@softmax_lastdim.register_fake
def _softmax_lastdim_fake(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.kernelevo_demo.softmax_lastdim(x)
