"""EXPLOIT (a jit function called under the name ``triton.jit(fn)`` binds escapes the constexpr-argument check):
``check_kernel_bodies`` keys ``jit_defs`` by each def's own name, but ``s22_exp = triton.jit(s22_exp_body)`` is called
as ``s22_exp``, which is in ``jit_names`` (model.jit_kernels) and not in ``jit_defs``: ``constexpr_arguments`` finds no
callee (None: nothing to check) and ``program_values_to_constexprs`` skips the call, so the ``fed`` fixpoint never
marks ``Q`` of ``s22_exp_body`` as handed a value of the program. ``Q`` therefore stays in ``_Judge.constant`` and
``math.exp(float(Q) ...)`` passes as compile-time host math. Under the interpreter the jit-to-jit call is plain
Python: ``Q`` is the scalar block ``(v - m) * 2**24`` as int32 and ``float(Q)`` reads it through the interpreter's
``tensor.__index__``: every exponential of the softmax is ``math.exp`` on the host. Triton only loads, takes the row
max and the sum, divides and stores.
Correct verdict: rejected (static_violation): the callee of a call is the jit function the called name is bound
to, whatever that name (``jit_defs`` should map every name in ``jit_names`` to its def, ``k = triton.jit(fn)`` to
``fn``), so ``Q`` is fed and ``float(Q)`` is refused.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


def s22_exp_body(v, Q: tl.constexpr):
    return v * 0.0 + math.exp(float(Q) / 16777216.0)


s22_exp = triton.jit(s22_exp_body)


@triton.jit
def s22_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
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
        s22_rows[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return out
