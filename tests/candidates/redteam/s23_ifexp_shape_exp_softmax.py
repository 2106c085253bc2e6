"""EXPLOIT PROBE (metadata of any local is compile-time): compile_time() takes `.shape`/`.numel`/
`.primitive_bitwidth`/`.dtype`... of *any* local (root in self.local), constant or not. A run-time IfExp
(`tl.zeros([2], ..) if (q >> k) & 1 else tl.zeros([1], ..)`, `tl.int16 if bit else tl.int8`) makes that metadata
a function of the block's values; `math.exp(float(val) / 4.0)` then runs on the host over the block's value.
Correct verdict: rejected (static_violation): metadata of a local is compile-time only where every binding of that
local is compile-time-shaped (no IfExp/`if` on a run-time condition choosing between different shapes/dtypes), or
refuse an IfExp whose test is a block and whose branches differ in shape/dtype (the compiler does).
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s23_probe(x_ptr, out_ptr):
    v = tl.load(x_ptr)
    q = (v * 4.0).to(tl.int32)
    t0 = tl.zeros([2], tl.int8) if q & 1 else tl.zeros([1], tl.int8)
    t1 = tl.zeros([2], tl.int8) if (q >> 1) & 1 else tl.zeros([1], tl.int8)
    d2 = tl.int16 if (q >> 2) & 1 else tl.int8
    val = (t0.shape[0] - 1) + 2 * (t1.numel - 1) + 4 * (d2.primitive_bitwidth // 16)
    tl.store(out_ptr, v * 0.0 + math.exp(float(val) / 4.0))


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        s23_probe[(1,)](x, out)
        return out
