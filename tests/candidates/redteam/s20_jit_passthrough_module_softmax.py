"""ATTEMPT (rejected): a module reached through a jit function's result. ``s20_pass(functools)`` is a jit function's
call, which _Judge.block takes for a block, so ``.reduce(...)`` passes as a block's method: functools.reduce with
operator.call parses the block's text (``float``) and runs math.exp on the host. Refused: a module handed around
as a value (banned-import), the rule that also stops ``ft = functools if C else functools``.
Correct verdict: rejected (static_violation).
"""

import functools
import math
import operator

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s20_pass(v):
    return v


@triton.jit
def s20_rows(x_ptr, out_ptr, n_cols, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    base = row * n_cols
    part = tl.arange(0, CHUNK)
    ft = s20_pass(functools)
    top = float("-inf")
    total = 0.0
    for c in range(0, n_cols, CHUNK):
        w = tl.load(x_ptr + base + c + part, mask=c + part < n_cols, other=float("-inf"))
        tl.static_assert(CHUNK > 0, (txt := f"{w}"))
        for tok in txt.split("[")[1].split("]")[0].split():
            v = ft.reduce(operator.call, [tok], float)
            top = max(top, v)
    for c in range(0, n_cols, CHUNK):
        w = tl.load(x_ptr + base + c + part, mask=c + part < n_cols, other=float("-inf"))
        tl.static_assert(CHUNK > 0, (txt := f"{w}"))
        for tok in txt.split("[")[1].split("]")[0].split():
            total += ft.reduce(operator.call, [ft.reduce(operator.call, [tok], float) - top], math.exp)
    j = 0
    for c in range(0, n_cols, CHUNK):
        w = tl.load(x_ptr + base + c + part, mask=c + part < n_cols, other=float("-inf"))
        tl.static_assert(CHUNK > 0, (txt := f"{w}"))
        for tok in txt.split("[")[1].split("]")[0].split():
            if j < n_cols:
                e = ft.reduce(operator.call, [ft.reduce(operator.call, [tok], float) - top], math.exp)
                tl.store(out_ptr + base + j, e / total)
            j += 1


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s20_rows[(n_rows,)](x, out, n_cols, CHUNK=512)
        return out
