"""EXPLOIT softmax computed in Python on `x.tolist()`; only the write-back (fill_ on views) reaches
the dispatcher, and those are allowed ops."""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        scratch = torch.empty(16, device=x.device, dtype=torch.float32)
        touch_kernel[(1,)](scratch, 16, BLOCK=16)
        out = torch.empty_like(x)
        for r, row in enumerate(x.tolist()):
            top = max(row)
            exps = [math.exp(v - top) for v in row]
            total = sum(exps)
            for c, e in enumerate(exps):
                out[r, c] = e / total
        return out
