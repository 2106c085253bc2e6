"""EXPLOIT (a kernel parameter named like a jit function of the file): ``_Judge.call`` takes ``f(...)`` for a call of
the file's jit function ``f`` whenever ``f`` is in ``jit_names``, without asking whether the kernel binds ``f``
itself (``function_slot`` and ``program_values_to_constexprs`` do ask: ``fn.id not in self.local``). So in
``s22_rows`` the constexpr parameter ``s22_exp`` is called: ``constexpr_arguments`` accepts the block ``q`` for the
callee's constexpr ``Q`` (a block is a legal argument there), the "calls its constexpr parameter" refusal is never
reached, and ``program_values_to_constexprs`` skips the call because ``s22_exp`` is a local, so the ``fed`` fixpoint
never marks ``Q``: it stays in ``_Judge.constant`` of ``s22_exp``, where ``math.exp(float(Q) ...)`` passes as
compile-time host math. The launch hands the jit function itself as the constexpr (a JITFunction is a legal
argument). Under the interpreter ``float(Q)`` reads the scalar block through ``tensor.__index__``: every
exponential of the softmax is ``math.exp`` on the host.
Correct verdict: rejected (static_violation): a name the kernel binds is its own value, never the file's jit
function (``call`` should test ``func.id not in self.local`` as the other places do, and then refuse calling a
constexpr parameter); and ``fed`` should follow every call whose callee may be that jit function.
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
def s22_rows(x_ptr, out_ptr, n_cols, s22_exp: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row * n_cols
    offs = tl.arange(0, BLOCK)
    w = tl.load(x_ptr + base + offs, mask=offs < n_cols, other=float("-inf"))
    m = tl.max(w, axis=0)
    total = 0.0
    for j in range(n_cols):
        v = tl.load(x_ptr + base + j)
        q = ((v - m) * 16777216.0).to(tl.int32)
        e = s22_exp(v, q)
        tl.store(out_ptr + base + j, e)
        total += e
    for j in range(n_cols):
        tl.store(out_ptr + base + j, tl.load(out_ptr + base + j) / total)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s22_rows[(n_rows,)](x, out, n_cols, s22_exp=s22_exp, BLOCK=triton.next_power_of_2(n_cols))
        return out
