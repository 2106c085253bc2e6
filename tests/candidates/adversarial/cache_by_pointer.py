"""EXPLOIT result caching keyed by input pointer (CUDA-L1 style).

The first result for an input address is kept; later calls with the same address (a harness that
reuses or re-fills its input buffers, or an allocator that hands back the same block for the next
seed's inputs) get a copy of the stale result. Only fresh values in the same storage, checked, catch it.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = {}

    def forward(self, x):
        key = (x.data_ptr(), tuple(x.shape))
        out = torch.empty_like(x)
        n = x.numel()
        if key in self.cache:
            copy_kernel[(triton.cdiv(n, 1024),)](self.cache[key], out, n, BLOCK=1024)
            return out
        softmax_rows[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        saved = torch.empty_like(out)
        copy_kernel[(triton.cdiv(n, 1024),)](out, saved, n, BLOCK=1024)
        self.cache[key] = saved
        return out
