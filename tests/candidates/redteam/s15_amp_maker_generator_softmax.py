"""EXPLOIT (static_liveness._amp_name vs a generator maker): ``s15_fwd, s15_bwd = s15_get_amp()`` where
``s15_get_amp`` holds ``yield`` statements before its ``return (torch.amp.custom_fwd, torch.amp.custom_bwd)``:
calling it returns a generator, so the unpacking takes the YIELDED values (a wrapper of the file, then
torch.amp.custom_bwd), never the returned tuple.

evaluator/static_liveness.py _amp_name trusts a module-level tuple binding from a no-argument call of an
undecorated function of the file when every ``return`` of it is a tuple whose element at the name's index is an
AMP decorator (_amp_value); it never asks whether the function is a generator (a ``yield`` anywhere in its body),
whose call returns no return value at all. So _hands_ctx_on accepts ``@s15_fwd`` under ``@staticmethod`` as
torch's custom_fwd, ctx_kept_to_itself judges forward (which keeps ctx to itself) and the backward stays dead. At
run time s15_fwd is s15_wrap, whose wrapper runs forward and then ctx.apply(out): BackwardCFunction.apply runs
_RowSoftmax.backward, which pops the op recorder (torch.utils._python_dispatch._disable_current_modes) and writes
torch.softmax over the copy kernel's output. Without the trick the output is the copy: wrong.
Correct verdict: rejected (static_violation): a maker with a yield (or await, or any Yield/YieldFrom node in its
own scope) returns no tuple: refuse it in _amp_name (and the same for lambda makers, async defs).
"""

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


def s15_wrap(fwd):
    def wrapper(ctx, x):
        out = fwd(ctx, x)
        ctx.apply(out)
        return out
    return wrapper


def s15_get_amp():
    yield s15_wrap
    yield torch.amp.custom_bwd
    return (torch.amp.custom_fwd, torch.amp.custom_bwd)


s15_fwd, s15_bwd = s15_get_amp()


class _RowSoftmax(torch.autograd.Function):
    @staticmethod
    @s15_fwd
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
