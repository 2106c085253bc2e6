"""EXPLOIT hang inside a kernel: a data-dependent loop that never ends, invisible to static checks.

The loop condition reads a value that the loop never changes (a counter that only grows past a
bound it cannot reach), so neither the compiler nor an AST scan can prove it infinite.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def axpy_spin(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    i = n * 0
    while i >= 0:  # i starts at 0 and only grows by 0 or 1: never negative
        i = i + (n > 0).to(tl.int32) * 0
    tl.store(out_ptr + offs, alpha * x + tl.load(y_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y):
        out = torch.empty_like(x)
        axpy_spin[(triton.cdiv(x.numel(), 1024),)](x, y, out, self.alpha, x.numel(), BLOCK=1024)
        return out
