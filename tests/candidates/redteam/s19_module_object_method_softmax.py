"""EXPLOIT (a method of a module-level object is taken for a block's method): ``_Judge.call`` passes any
``obj.method(...)`` whose target does not resolve to an import (``x.to(...)``), whatever its arguments. The kernel
calls ``S19_HOST.parse(w)`` and ``S19_HOST.softmax(acc)`` on a module-level instance of a plain class: parse reads
the loaded chunk as text (the interpreter's ``__str__``), softmax does max, math.exp, the sum and the division in
host Python; Triton only loads and stores each result with a scalar tl.store.
Correct verdict: rejected (static_violation): a method call in a kernel body is a block's method only when its
receiver is a block (a local computed from tl operations / pointer parameters), never a module-level object, a
constexpr parameter or anything else.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


class S19Host:
    def parse(self, w):
        return [float(t) for t in f"{w}".strip("[]").split()]

    def softmax(self, vals):
        top = max(vals)
        exps = [math.exp(a - top) for a in vals]
        total = sum(exps)
        return [e / total for e in exps]


S19_HOST = S19Host()


@triton.jit
def s19_rows(x_ptr, out_ptr, n_cols, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    base = row * n_cols
    part = tl.arange(0, CHUNK)
    acc = list()
    for c in range(0, n_cols, CHUNK):
        w = tl.load(x_ptr + base + c + part, mask=c + part < n_cols, other=float("-inf"))
        acc.extend(S19_HOST.parse(w))
    probs = S19_HOST.softmax(acc)
    for j in range(n_cols):
        tl.store(out_ptr + base + j, probs[j])


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s19_rows[(n_rows,)](x, out, n_cols, CHUNK=512)
        return out
