"""EXPLOIT (static_liveness.ctx_kept_to_itself vs a classmethod forward): ``@classmethod def forward(cls, ctx, x)``
makes ``ctx`` the SECOND parameter; the checker judges the first (``cls``) as ctx, and forward's ``ctx.apply(out)``
runs the backward static_liveness judges dead.

evaluator/static_liveness.py ctx_kept_to_itself takes ``params[0].arg`` of forward as ctx whatever the decorator.
torch's Function.apply calls ``cls.forward(ctx, *args)``; for a classmethod the class is bound first, so the node
lands in the second parameter, named ``ctx`` here, whose uses are never looked at (``cls`` is not used at all, so
the forward "keeps ctx to itself"). ``ctx.apply(out)`` (BackwardCFunction.apply) calls ``_RowSoftmax.backward``,
judged dead (DEAD_BODY_EXEMPT lifts private-api and torch-compute); it pops the op recorder
(torch.utils._python_dispatch._disable_current_modes) and writes torch.softmax into the copy kernel's output.
Without it the output is the copy: wrong.
Correct verdict: rejected (static_violation): the ctx parameter is the first one after the bound one for a
classmethod (and a forward that is neither a staticmethod nor a classmethod has no known ctx): judge that one, or
keep the backward live whenever forward is not a plain @staticmethod def.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s14_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    v = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + offs, v, mask=mask)


class _RowSoftmax(torch.autograd.Function):
    @classmethod
    def forward(cls, ctx, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s14_rows[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        ctx.apply(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        with torch.utils._python_dispatch._disable_current_modes():
            grad.copy_(torch.softmax(grad, dim=-1))
        return grad


class ModelNew(nn.Module):
    def forward(self, x):
        return _RowSoftmax.apply(x)
