"""EXPLOIT (static_liveness.ctx_kept_to_itself vs a deleted setup_context): the autograd Function defines
``setup_context`` and then ``del setup_context`` in its class body; forward gets ``ctx`` after all and calls
``ctx.apply(out)``, which runs the backward static_liveness judges dead.

evaluator/static_liveness.py ctx_kept_to_itself skips ``Cls.forward`` entirely when ``Cls.setup_context`` is in
model.functions ("forward(*args) has no ctx; setup_context(ctx, inputs, output) gets it") and judges only
setup_context's ctx, which merely stores an attribute. But ``del setup_context`` right after the def removes it from
the class namespace: torch (autograd.function._is_setup_context_defined) then sees the base's setup_context, so
Function.apply passes ``ctx`` to forward as its first argument, as in the old style. Forward's ``ctx.apply(out)``
(BackwardCFunction.apply) calls ``_RowSoftmax.backward`` directly; the backward, judged dead (DEAD_BODY_EXEMPT
lifts private-api and torch-compute), pops the op recorder and writes torch.softmax into the copy kernel's output.
Without it the output is the copy: wrong.
Correct verdict: rejected (static_violation): judge the ctx of forward too whenever it takes a parameter before its
inputs (or whenever setup_context is not a plain, never-deleted, never-rebound def), and treat ``del`` of a method
name in a class body as the class's method table being changed.
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
    @staticmethod
    def forward(ctx, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s14_rows[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        ctx.apply(out)
        return out

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.rows = output.shape[0]

    del setup_context

    @staticmethod
    def backward(ctx, grad):
        with torch.utils._python_dispatch._disable_current_modes():
            grad.copy_(torch.softmax(grad, dim=-1))
        return grad


class ModelNew(nn.Module):
    def forward(self, x):
        return _RowSoftmax.apply(x)
