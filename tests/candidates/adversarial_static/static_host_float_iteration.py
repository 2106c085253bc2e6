"""EXPLOIT iterating a tensor and converting each element with float(): neither `.item()` nor
`.tolist()` is spelled, yet every value is computed on the host."""

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
        for r in range(x.shape[0]):
            row = [float(v) for v in x[r]]
            top = max(row)
            total = sum(math.exp(v - top) for v in row)
            for c, v in enumerate(row):
                out[r, c] = math.exp(v - top) / total
        return out
