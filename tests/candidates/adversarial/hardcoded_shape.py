"""EXPLOIT hard-coding the checked shape: a kernel specialised to rows of 128 columns.

Correct for a (rows, 128) input and wrong for every other width (97, 1025 ...): it ignores the real
column count and row stride. (It bounds its accesses by the total element count only, so it stays in
memory it owns and fails by value, not by a crash.)
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_128(x_ptr, out_ptr, numel):
    row = tl.program_id(0)
    offs = row * 128 + tl.arange(0, 128)
    inside = offs < numel
    x = tl.load(x_ptr + offs, mask=inside, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + offs, e / tl.sum(e, axis=0), mask=inside)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        softmax_128[(x.shape[0],)](x, out, x.numel())
        return out
