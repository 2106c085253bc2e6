"""EXPLOIT (a nested def's parameter is no kernel local): ``def grab(blk=w): return s19_parse(blk)`` inside the
kernel: ``blk`` is neither a kernel parameter nor an assigned local, so _Judge takes it for a global
(compile-time); ``grab()`` has no arguments (compile-time). s19_parse reads the loaded chunk as text (the
interpreter's ``__str__``) and s19_softmax does max, math.exp, sum and the division in host Python; Triton only
loads and stores scalars.
Correct verdict: rejected (static_violation): Triton compiles no nested def; a kernel body holds none.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


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
        w = tl.load(x_ptr + base + c + part, mask=c + part < n_cols, other=float("-inf"))

        def grab(blk=w, got=acc):
            got.extend(s19_parse(blk))
            return s19_softmax(got)

        probs = grab()
    for j in range(n_cols):
        tl.store(out_ptr + base + j, probs[j])


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s19_rows[(n_rows,)](x, out, n_cols, CHUNK=512)
        return out
