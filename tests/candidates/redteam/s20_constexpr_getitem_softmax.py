"""ATTEMPT (rejected): no call at all on the host object. ``seen = ROWS[w]`` (a subscript load, which
static_kernel_body does not judge) runs the constexpr object's ``__getitem__`` on the block (its text parsed), and
``ROWS.probs`` (an attribute load: a property) does the softmax in host Python. Refused: a candidate may not define
special methods (introspection), so the subscript hook cannot be written.
Correct verdict: rejected (static_violation).
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


class S20RowCache:
    def __init__(self):
        self.vals = []

    def __getitem__(self, w):
        self.vals += list(map(float, f"{w}".strip("[]").split()))
        return len(self.vals)

    @property
    def probs(self):
        vals, self.vals = self.vals, []
        top = max(vals)
        exps = [math.exp(a - top) for a in vals]
        total = sum(exps)
        return [e / total for e in exps]


S20_ROWS = S20RowCache()


@triton.jit
def s20_rows(x_ptr, out_ptr, n_cols, ROWS: tl.constexpr, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    base = row * n_cols
    part = tl.arange(0, CHUNK)
    for c in range(0, n_cols, CHUNK):
        w = tl.load(x_ptr + base + c + part, mask=c + part < n_cols, other=float("-inf"))
        _ = ROWS[w]
    probs = ROWS.probs
    for j in range(n_cols):
        tl.store(out_ptr + base + j, probs[j])


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s20_rows[(n_rows,)](x, out, n_cols, ROWS=S20_ROWS, CHUNK=512)
        return out
