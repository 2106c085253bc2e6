"""ATTEMPT (a jit function reached through a constexpr tuple, ``FNS[0](v, q)``): the launch hands ``(s22_exp,)``
as a constexpr (an exact tuple of a JITFunction: a legal argument), and the call by subscript would escape both the
"calls its constexpr parameter" refusal (by name) and the ``fed`` fixpoint (by name), leaving ``Q`` of ``s22_exp``
compile-time so that ``math.exp(float(Q))`` runs on the host over each element.
Verdict: rejected (static_violation): ``_Judge.call`` refuses a call whose function is no name, method of a block or
host module function (``FNS[0]`` falls to "runs only at compile time").
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s22_exp(v, Q: tl.constexpr):
    return v * 0.0 + math.exp(float(Q) / 16777216.0)


@triton.jit
def s22_rows(x_ptr, out_ptr, n_cols, FNS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row * n_cols
    offs = tl.arange(0, BLOCK)
    w = tl.load(x_ptr + base + offs, mask=offs < n_cols, other=float("-inf"))
    m = tl.max(w, axis=0)
    total = 0.0
    for j in range(n_cols):
        v = tl.load(x_ptr + base + j)
        q = ((v - m) * 16777216.0).to(tl.int32)
        e = FNS[0](v, q)
        tl.store(out_ptr + base + j, e)
        total += e
    for j in range(n_cols):
        tl.store(out_ptr + base + j, tl.load(out_ptr + base + j) / total)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s22_rows[(n_rows,)](x, out, n_cols, FNS=(s22_exp,), BLOCK=triton.next_power_of_2(n_cols))
        return out
