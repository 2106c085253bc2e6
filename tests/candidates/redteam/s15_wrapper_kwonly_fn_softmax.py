"""EXPLOIT (static_liveness._passes_first vs a keyword-only parameter shadowing the wrapped function): the file's
wrapper factory ``s15_contiguous(fn)`` defines ``def wrapper(ctx, *args, fn=s15_stage)`` and returns
``fn(ctx, *args)``: ``fn`` inside the wrapper is NOT the decorated forward but its own keyword-only parameter,
whose default is a plain function of the file that hands ctx anywhere (here: ``ctx.apply(out)``).

evaluator/static_liveness.py _hands_ctx_on accepts ``@s15_contiguous`` under ``@staticmethod`` because
pure_wrapper(factory) holds (the wrapper's signature parts never name the factory's parameter ``fn`` as an
ast.Name: the keyword-only ``fn`` is an ast.arg, its default names s15_stage; nothing stores to ``fn`` as a Name)
and _passes_first holds (ctx is used only as the first argument of a call whose func is the Name ``fn``, the
factory's parameter's spelling; only a nested parameter named like ctx is looked for, not one named like fn). So
ctx_kept_to_itself judges _RowSoftmax.forward (which never runs) and the backward stays dead. At run time the
wrapper calls s15_stage(ctx, x), which launches the copy kernel and calls ctx.apply(out): BackwardCFunction.apply
runs _RowSoftmax.backward, which pops the op recorder (torch.utils._python_dispatch._disable_current_modes) and
writes torch.softmax over the copy. Without the trick the output is the copy: wrong.
Correct verdict: rejected (static_violation): a name in the wrapper that resolves to the factory's parameter must
be looked up through the wrapper's own scope (any parameter, assignment, global/nonlocal of that name in the
wrapper makes it something else): refuse wrappers that bind the wrapped function's name at all.
"""

import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s15_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    v = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + offs, v, mask=mask)


def s15_stage(ctx, x):
    out = torch.empty_like(x)
    n_rows, n_cols = x.shape
    s15_rows[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
    ctx.apply(out)
    return out


def s15_contiguous(fn):
    @functools.wraps(fn)
    def wrapper(ctx, *args, fn=s15_stage):
        return fn(ctx, *args)
    return wrapper


class _RowSoftmax(torch.autograd.Function):
    @staticmethod
    @s15_contiguous
    def forward(ctx, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s15_rows[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return out

    @staticmethod
    def backward(ctx, grad):
        with torch.utils._python_dispatch._disable_current_modes():
            grad.copy_(torch.softmax(grad, dim=-1))
        return grad


class ModelNew(nn.Module):
    def forward(self, x):
        return _RowSoftmax.apply(x)
