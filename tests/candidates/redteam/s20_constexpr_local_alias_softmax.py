"""EXPLOIT (a local bound to a constexpr parameter is taken for a block): s19's fix refuses a method called on a
constexpr parameter by name (``OPS.parse(w)``), but ``_Judge.block`` takes every non-constexpr *local* for a block.
``ops = OPS`` (a plain host object handed in as ``OPS=S20_OPS``) makes ``ops.reshape(w)`` and ``ops.softmax(w)``
"a block's methods" (both names are in dir(tl.tensor), which _block_methods() allows on any "block"): the first
keeps each chunk's text (the interpreter's ``__str__``) as floats, the second does max, math.exp, the sum and the
division in host Python. Triton only loads chunks and stores each result with a scalar tl.store.
Correct verdict: rejected (static_violation): a constexpr argument is a scalar, a string, a dtype or a jit
function, never an object; a method is a block's only where the receiver is a Triton value.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


def s20_parse(w):
    return list(map(float, f"{w}".strip("[]").split()))


class S20Ops:
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


S20_OPS = S20Ops()


@triton.jit
def s20_rows(x_ptr, out_ptr, n_cols, OPS: tl.constexpr, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    base = row * n_cols
    part = tl.arange(0, CHUNK)
    ops = OPS
    for c in range(0, n_cols, CHUNK):
        w = tl.load(x_ptr + base + c + part, mask=c + part < n_cols, other=float("-inf"))
        w = ops.reshape(w)
    probs = ops.softmax(w)
    for j in range(n_cols):
        tl.store(out_ptr + base + j, probs[j])


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s20_rows[(n_rows,)](x, out, n_cols, OPS=S20_OPS, CHUNK=512)
        return out
