"""EXPLOIT torch compute hidden in operators: `x * alpha + y` on tensors, plus a decoy copy kernel.

Operators on plain names cannot be typed statically, so this passes an AST check; the runtime
op guard (dispatch-level) must see aten.mul/aten.add in the forward path.
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
        tmp = x * self.alpha + y
        out = torch.empty_like(tmp)
        n = tmp.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](tmp, out, n, BLOCK=1024)
        return out
