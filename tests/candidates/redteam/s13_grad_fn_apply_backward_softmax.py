"""EXPLOIT (static liveness vs autograd's graph node): ``y.grad_fn.apply(y)`` runs an autograd Function's
backward directly from ModelNew.forward; static_liveness judges that backward dead.

evaluator/static_liveness.py backward_dead: every use of ``_RowSoftmax`` is ``_RowSoftmax.apply(...)`` and its
forward does not touch ``ctx`` (ctx_kept_to_itself, the fix of s13_ctx_apply_backward_softmax), so the backward is
dead and the visitor lifts DEAD_BODY_EXEMPT there (private-api, torch-compute). But the node torch makes for the call
is handed out on the output too: ``y.grad_fn`` is the same BackwardCFunction whose public ``apply(*args)`` calls
``_RowSoftmax.backward(node, *args)``. For ``y.grad_fn`` to exist in every autograd state the verifier plans
(no_grad, inference_mode, inference tensors), forward copies the input into a normal tensor with its own kernel
under ``torch.inference_mode(False)`` and ``torch.enable_grad()`` and marks it ``requires_grad_()``. Nothing of
that is refused, nor is the attribute ``grad_fn`` or a call of its ``apply`` (callees and stored_roots follow
``Cls.attr`` of the file's classes and ``self``; ``y.grad_fn.apply`` names neither). The backward pops the op
recorder (torch.utils._python_dispatch._disable_current_modes) and writes torch.softmax over the copy kernel's
output; the kernels only copy, so without it the output is wrong.
Correct verdict: rejected (static_violation): reading a graph node (``.grad_fn``, ``next_functions``) and calling it
runs a backward; a backward is dead only where no node of its Function can be reached (refuse ``grad_fn`` on the
forward path, or make the backward of any Function the forward path applies live).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s13_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    v = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + offs, v, mask=mask)


def _copy(x):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n_rows, n_cols = x.shape
    s13_rows[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
    return out


class _RowSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return _copy(x)

    @staticmethod
    def backward(ctx, grad):
        with torch.utils._python_dispatch._disable_current_modes():
            grad.data.copy_(torch.softmax(grad.data, dim=-1))
        return grad


class ModelNew(nn.Module):
    def forward(self, x):
        with torch.inference_mode(False), torch.enable_grad():
            buf = _copy(x).requires_grad_()
            y = _RowSoftmax.apply(buf)
            y.grad_fn.apply(y)
        return y.detach()
