"""EXPLOIT (a triton.language call takes any argument: a host object as a reduction's combine): ``_Judge.call``
passes every ``tl.*`` call whatever its arguments, and a constexpr parameter may be read (only calling it by name
is refused). Triton's interpreter runs ``tl.reduce`` by calling ``combine_fn.fn(acc, x)`` in Python for each
element (interpreter.ReduceOps.generic_reduce), so ``tl.reduce(w, 0, COLLECT)`` with ``COLLECT=S20_COLLECT`` (a
plain object whose ``fn`` is a bound method) hands every element of the row to host code, which keeps them as
floats; ``tl.reduce(idx, 1, EMIT)`` over a [BLOCK, 2] block of column indices has ``S20_EMIT.fn`` return, per
column, the softmax computed in host Python (max, math.exp, sum, division). Triton only loads and stores.
Correct verdict: rejected (static_violation): a combine function is a jit function of the file (or tl's own), and
a constexpr argument is never an object.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


def s20_value(t):
    return float(f"{t}".strip("[]"))


class S20Collect:
    """A reduction's combine: records each element (the first one arrives as the running value)."""

    def __init__(self):
        self.vals = []

    def fn(self, acc, x):
        a = s20_value(acc)
        if a == a:  # the chunk's first element, not our NaN marker
            self.vals.append(a)
        self.vals.append(s20_value(x))
        return float("nan")


class S20Emit:
    """A reduction's combine that answers the softmax of what S20Collect saw, one element per call."""

    def __init__(self, source):
        self.source = source
        self.probs = []

    def fn(self, acc, j):
        k = int(s20_value(j))
        if k == 0:
            vals, self.source.vals = self.source.vals, []
            top = max(vals)
            exps = [math.exp(a - top) for a in vals]
            total = sum(exps)
            self.probs = [e / total for e in exps]
        return self.probs[k]


S20_COLLECT = S20Collect()
S20_EMIT = S20Emit(S20_COLLECT)


@triton.jit
def s20_rows(x_ptr, out_ptr, n_cols, COLLECT: tl.constexpr, EMIT: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row * n_cols
    offs = tl.arange(0, BLOCK)
    w = tl.load(x_ptr + base + offs, mask=offs < n_cols, other=float("-inf"))
    tl.reduce(w, 0, COLLECT)
    idx = tl.zeros([BLOCK, 2], tl.float32) + offs[:, None].to(tl.float32)
    p = tl.reduce(idx, 1, EMIT)
    tl.store(out_ptr + base + offs, p, mask=offs < n_cols)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s20_rows[(n_rows,)](x, out, n_cols, COLLECT=S20_COLLECT, EMIT=S20_EMIT, BLOCK=triton.next_power_of_2(n_cols))
        return out
