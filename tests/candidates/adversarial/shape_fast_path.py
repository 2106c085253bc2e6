"""EXPLOIT checked shapes != timed shapes (GPU): correct on small inputs, half the work on large ones.

A harness that checks correctness on small cases but times the scored (large) case is fooled; the
large path only processes the first half of the vector.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        work = n if n <= (1 << 16) else n // 2
        axpy_kernel[(triton.cdiv(work, 1024),)](x, y, out, self.alpha, work, BLOCK=1024)
        return out
