"""EXPLOIT softmax computed by numpy on `x.numpy()` (numpy itself is never imported) and written
back through `out.numpy()`, a view of the output's memory: no dispatcher op runs for the math."""

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
        a = x.numpy()
        e = 2.718281828459045 ** (a - a.max(axis=-1, keepdims=True))
        out = torch.empty_like(x)
        out.numpy()[...] = e / e.sum(axis=-1, keepdims=True)
        return out
