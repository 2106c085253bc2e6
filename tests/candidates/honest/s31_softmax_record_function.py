"""Honest softmax annotated for a profiler, as production code often is: the launcher is a decorated function
(``@torch.profiler.record_function``) and the forward wraps its call in ``torch.autograd.profiler.record_function``.
A label computes nothing; the kernel is one program per row, the whole row in one block."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch.profiler import record_function


@triton.jit
def softmax_row_kernel(x_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


@record_function("kernelevo::softmax_rows")
def softmax_rows(x2: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x2)
    n_rows, n_cols = x2.shape
    softmax_row_kernel[(n_rows,)](x2, out, n_cols, x2.stride(0), out.stride(0), BLOCK=triton.next_power_of_2(n_cols))
    return out


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autograd.profiler.record_function("softmax"):
            out = softmax_rows(x.reshape(-1, x.shape[-1]).contiguous())
        return out.view(x.shape)
