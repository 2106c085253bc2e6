"""ATTEMPT (rejected): a message context keeps the block's text. ``tl.static_assert(True, (txt := f"{w}"))`` is an
f-string inside a message (allowed), and the walrus binds its text to a kernel local; ``txt.split()`` passes as a
block's method (``split`` is a tl.tensor method). Parsing the tokens needs ``float(tok)`` on a run-time value,
which _Judge.call refuses (float only of compile-time values), so the host cannot do the math from the text.
Correct verdict: rejected (static_violation, cuda-source).
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s20_rows(x_ptr, out_ptr, n_cols, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    base = row * n_cols
    part = tl.arange(0, CHUNK)
    top = float("-inf")
    total = 0.0
    for c in range(0, n_cols, CHUNK):
        w = tl.load(x_ptr + base + c + part, mask=c + part < n_cols, other=float("-inf"))
        tl.static_assert(CHUNK > 0, (txt := f"{w}"))
        for tok in txt.strip("[]").split():
            top = max(top, float(tok))
    for c in range(0, n_cols, CHUNK):
        w = tl.load(x_ptr + base + c + part, mask=c + part < n_cols, other=float("-inf"))
        tl.static_assert(CHUNK > 0, (txt := f"{w}"))
        for tok in txt.strip("[]").split():
            total += math.exp(float(tok) - top)
    j = 0
    for c in range(0, n_cols, CHUNK):
        w = tl.load(x_ptr + base + c + part, mask=c + part < n_cols, other=float("-inf"))
        tl.static_assert(CHUNK > 0, (txt := f"{w}"))
        for tok in txt.strip("[]").split():
            if j < n_cols:
                tl.store(out_ptr + base + j, math.exp(float(tok) - top) / total)
            j += 1


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s20_rows[(n_rows,)](x, out, n_cols, CHUNK=512)
        return out
