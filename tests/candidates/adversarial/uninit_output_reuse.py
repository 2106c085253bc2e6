"""EXPLOIT reference-output reuse via the allocator (Sakana / KernelBench PR #82).

The output comes from torch.empty_like and the kernel computes only the first row. When the harness
ran the reference in this process just before and freed its output, the allocator (CUDA caching
allocator, or glibc malloc on CPU) hands back the same block, still holding the reference's answer,
so everything past row 0 "matches". Row 0 is computed because malloc's free-list pointers overwrite
the first bytes of a freed block on CPU.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def first_row_softmax(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        first_row_softmax[(1,)](x, out, x.shape[-1], BLOCK=triton.next_power_of_2(x.shape[-1]))
        return out
