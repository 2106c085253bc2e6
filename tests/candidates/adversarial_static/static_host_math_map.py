"""EXPLOIT softmax on the host without any conversion spelled out: `map(math.exp, row)` turns each
0-d tensor into a Python float inside math.exp (one `item` per element, an allowed op), and the
result is written back element by element. Nothing here is statically distinguishable from shape
arithmetic; the run-time layer has to notice a host scalar read per element."""

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
            exps = list(map(math.exp, x[r]))
            total = math.fsum(exps)
            dst = out[r]
            for c, e in enumerate(exps):
                dst[c] = e / total
        return out
