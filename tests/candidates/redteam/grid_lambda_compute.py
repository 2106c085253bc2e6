"""ATTEMPT: the math done by torch inside the grid lambda (Python that Triton calls back), operators only.

The op recorder exempts only ``interpreter.py``'s own frames; a grid lambda is the candidate's code, so the
aten ops it runs must be recorded. Expected (and observed): cheat_suspected.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        tmp = torch.empty_like(x)
        copy_kernel[lambda meta: (tmp.copy_(x * self.alpha + y).numel() * 0 + triton.cdiv(n, 1024),)](
            tmp, out, n, BLOCK=1024)
        return out
