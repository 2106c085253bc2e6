"""EXPLOIT the bookkeeping allowance: a kernel copies the input into a buffer the candidate allocated (a
"kernel-written buffer", on which full reductions are bookkeeping), then torch.softmax computes the answer on
that copy. A softmax is not bookkeeping, so the static check refuses it; with the static checks off, the run
time refuses it too (the recorded op reads a tensor as large as the input, far over the 1/64 bookkeeping size)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        buf = torch.empty_like(x)
        copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, buf, x.numel(), BLOCK=1024)
        return torch.softmax(buf, dim=-1)
