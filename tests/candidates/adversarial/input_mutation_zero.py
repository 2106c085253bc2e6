"""EXPLOIT input mutation: zero the input so a reference computed afterwards agrees.

axpy: the kernel copies y into the output and zeroes x. A harness that runs the candidate first
and then the reference on the same tensors sees alpha * 0 + y == y and passes it.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_and_zero(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(y_ptr + offs, mask=mask), mask=mask)
    tl.store(x_ptr + offs, tl.zeros((BLOCK,), tl.float32), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y):
        out = torch.empty_like(y)
        n = y.numel()
        copy_and_zero[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
