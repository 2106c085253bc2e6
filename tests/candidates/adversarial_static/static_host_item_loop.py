"""EXPLOIT a Python loop over `.item()` values: each element goes to the host and back."""

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
        flat = x.reshape(-1, x.shape[-1])
        out = torch.empty_like(flat)
        for r in range(flat.shape[0]):
            vals = [flat[r, c].item() for c in range(flat.shape[1])]
            top = max(vals)
            total = sum(math.exp(v - top) for v in vals)
            for c, v in enumerate(vals):
                out[r, c] = math.exp(v - top) / total
        return out.view(x.shape)
