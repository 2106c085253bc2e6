"""EXPLOIT (static_liveness._hands_ctx_on vs an AMP decorator called with its function argument):
``@torch.amp.custom_fwd(s16_pick, device_type="cpu")`` on _RowSoftmax.forward. _hands_ctx_on takes a Call
decorator's ``func`` and passes any whose name is in AMP_DECORATORS, never looking at the call's arguments. But
``custom_fwd(fwd, device_type=...)`` with ``fwd`` given does not return a decorator: it returns ``fwd`` wrapped
(decorate_fwd). Applied to forward, that wrapper calls ``s16_pick(forward)`` (after setting two attributes on its
first argument, here the function), and s16_pick returns s16_stage, so the staticmethod holds s16_stage.

ctx_kept_to_itself judges the written forward (which never runs), so the backward is dead and never judged. At
run time s16_stage launches the copy kernel and calls ctx.apply(out): BackwardCFunction.apply runs the backward,
which pops the op recorder (torch.utils._python_dispatch._disable_current_modes) and writes torch.softmax over
the copy. Without the trick the output is the copy: wrong.
Correct verdict: rejected (static_violation): an AMP decorator passes only when applied bare or called with
keyword arguments alone (device_type, cast_inputs), never with a positional argument or ``fwd=``/``bwd=``.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s16_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    v = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + offs, v, mask=mask)


def s16_stage(ctx, x):
    out = torch.empty_like(x)
    n_rows, n_cols = x.shape
    s16_rows[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
    ctx.apply(out)
    return out


def s16_pick(fn):
    return s16_stage


class _RowSoftmax(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(s16_pick, device_type="cpu")
    def forward(ctx, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s16_rows[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return out

    @staticmethod
    def backward(ctx, grad):
        with torch.utils._python_dispatch._disable_current_modes():
            grad.copy_(torch.softmax(grad, dim=-1))
        return grad


class ModelNew(nn.Module):
    def forward(self, x):
        return _RowSoftmax.apply(x)
