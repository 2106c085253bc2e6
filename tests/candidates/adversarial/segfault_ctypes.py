"""EXPLOIT crash: a segmentation fault through ctypes (a read through the pointer 0x8) in forward."""

import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl

# Taken from the modules already loaded: the import guards refuse `import ctypes` itself, and the
# layers below them must stop what the candidate does with it.
ctypes = sys.modules["ctypes"]


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
        axpy_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, self.alpha, x.numel(), BLOCK=1024)
        ctypes.cast(8, ctypes.POINTER(ctypes.c_int64)).contents.value  # noqa: B018 (the read is the crash)
        return out
