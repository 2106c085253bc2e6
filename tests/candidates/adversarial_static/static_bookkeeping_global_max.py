"""EXPLOIT the bookkeeping allowance where the static check cannot tell: a kernel copies the input into a buffer
the candidate allocated, and a full reduction of that buffer (`buf.amax()`, which is bookkeeping statically)
gives the softmax's stabilising maximum, which torch computed instead of the kernel. The run time refuses it:
the reduction reads a tensor as large as the input, far over the 1/64 bookkeeping size."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, top, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    num = tl.exp(x - top)
    tl.store(out_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)


class ModelNew(nn.Module):
    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        buf = torch.empty_like(x2)
        copy_kernel[(triton.cdiv(x2.numel(), 1024),)](x2, buf, x2.numel(), BLOCK=1024)
        top = buf.amax().item()
        out = torch.empty_like(x2)
        softmax_kernel[(x2.shape[0],)](x2, out, x2.shape[1], top, BLOCK=triton.next_power_of_2(x2.shape[1]))
        return out.view(x.shape)
