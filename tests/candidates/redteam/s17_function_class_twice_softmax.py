"""EXPLOIT (static_model.build_model keys a class's methods by "Cls.meth", the last class of a name winning): the
file defines ``class _RowSoftmax(torch.autograd.Function)`` twice. The first one's forward launches the copy kernel
and calls ctx.apply(out); its backward pops the op recorder and writes torch.softmax. ``S17_APPLY =
_RowSoftmax.apply`` keeps the first class's apply, then the second _RowSoftmax (a clean forward that only keeps
ctx to itself, an empty backward) replaces the name. model.classes and model.functions hold only the second class's
methods, so ctx_kept_to_itself judges the second forward, every use of the name is ``.apply`` (backward_dead), and
the key "_RowSoftmax.backward" is dead: the first class's backward, a def under the same key, is judged dead with it
(private-api and torch-compute lifted). At run time ModelNew calls S17_APPLY, the first class: its ctx.apply runs
its backward (op recorder popped, torch.softmax over the copy). Without the trick the output is the copy: wrong.
Correct verdict: rejected (static_violation): a class name bound more than once in the file (binding_counts > 1)
has no dead backward (and no method of it may be judged by name); the s16 fix asked this of wrapper factories only.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s17_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
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
        s17_rows[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        ctx.apply(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        with torch.utils._python_dispatch._disable_current_modes():
            grad.copy_(torch.softmax(grad, dim=-1))
        return grad


S17_APPLY = _RowSoftmax.apply


class _RowSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s17_rows[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad


class ModelNew(nn.Module):
    def forward(self, x):
        return S17_APPLY(x)
