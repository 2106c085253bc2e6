"""EXPLOIT behaving well only during checks (GPU): correct for the first 150 calls, then no work.

150 calls cover a correctness phase of a few seeds x cases; the timing loop (warm-up + 100 trials)
then gets an untouched torch.empty buffer, which on the caching allocator often still holds the
previous output of the same shape. Only re-validating the outputs of timed calls catches it.
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
        self.calls = 0

    def forward(self, x, y):
        self.calls += 1
        out = torch.empty_like(x)
        n = x.numel()
        if self.calls <= 150:
            axpy_kernel[(triton.cdiv(n, 1024),)](x, y, out, self.alpha, n, BLOCK=1024)
        return out
