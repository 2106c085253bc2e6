"""EXPLOIT (an attribute named ``value`` is judged compile-time on any object): ``_Judge.compile_time`` takes every
``x.value`` (like ``dtype``/``shape``) for a compile-time value, whatever ``x`` holds. The kernel stores each loaded
chunk into a module-level object (``S19_BOX.value = w``: an attribute store binds no local) and calls the plain
host function ``s19_parse(S19_BOX.value)``, which reads the block as text (the interpreter's ``__str__``); the
softmax (max, math.exp, sum, division) runs in host Python in ``s19_softmax(S19_BOX.value)``; Triton only loads and
stores each result with a scalar tl.store.
Correct verdict: rejected (static_violation): ``value``/``dtype``/... are compile-time only on a value known to be a
block or constexpr (and attribute stores through a global in a kernel body are refused).
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


class S19Box:
    value = None


S19_BOX = S19Box()


def s19_parse(w):
    return [float(t) for t in f"{w}".strip("[]").split()]


def s19_softmax(vals):
    top = max(vals)
    exps = [math.exp(a - top) for a in vals]
    total = sum(exps)
    return [e / total for e in exps]


@triton.jit
def s19_rows(x_ptr, out_ptr, n_cols, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    base = row * n_cols
    part = tl.arange(0, CHUNK)
    acc = list()
    for c in range(0, n_cols, CHUNK):
        S19_BOX.value = tl.load(x_ptr + base + c + part, mask=c + part < n_cols, other=float("-inf"))
        acc.extend(s19_parse(S19_BOX.value))
    S19_BOX.value = acc
    probs = s19_softmax(S19_BOX.value)
    for j in range(n_cols):
        tl.store(out_ptr + base + j, probs[j])


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s19_rows[(n_rows,)](x, out, n_cols, CHUNK=512)
        return out
