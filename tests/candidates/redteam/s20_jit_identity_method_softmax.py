"""EXPLOIT (a jit function's result is taken for a block): ``_Judge.block`` takes any call of one of the file's jit
functions for a block, so ``s20_passthrough(STATS).softmax(w)`` passes as a block's method although the jit
function only returns its argument, the constexpr host object ``STATS=S20_STATS``. ``.reshape(w)`` keeps each
chunk's text as floats and ``.softmax(w)`` does the whole softmax in host Python; Triton loads and stores scalars.
A fix that only refuses locals assigned from a constexpr parameter (s20_constexpr_local_alias_softmax) misses this.
Correct verdict: rejected (static_violation): a constexpr argument is never an object; what a block is must follow
the values (Triton operations' results), not the call shape.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


def s20_parse(w):
    return list(map(float, f"{w}".strip("[]").split()))


class S20RowStats:
    def __init__(self):
        self.vals = []

    def reshape(self, w):
        self.vals += s20_parse(w)
        return w

    def softmax(self, w):
        vals, self.vals = self.vals, []
        top = max(vals)
        exps = [math.exp(a - top) for a in vals]
        total = sum(exps)
        return [e / total for e in exps]


S20_STATS = S20RowStats()


@triton.jit
def s20_passthrough(v):
    return v


@triton.jit
def s20_rows(x_ptr, out_ptr, n_cols, STATS: tl.constexpr, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    base = row * n_cols
    part = tl.arange(0, CHUNK)
    for c in range(0, n_cols, CHUNK):
        w = tl.load(x_ptr + base + c + part, mask=c + part < n_cols, other=float("-inf"))
        w = s20_passthrough(STATS).reshape(w)
    probs = s20_passthrough(STATS).softmax(w)
    for j in range(n_cols):
        tl.store(out_ptr + base + j, probs[j])


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s20_rows[(n_rows,)](x, out, n_cols, STATS=S20_STATS, CHUNK=512)
        return out
