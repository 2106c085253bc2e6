"""EXPLOIT (static liveness vs autograd): inside an autograd Function's forward, ``ctx.apply(out)`` calls the
Function's own ``backward`` directly, a body static_liveness judges dead.

evaluator/static_liveness.py (_Liveness.mark_class / backward_dead) makes ``_RowSoftmax.backward`` dead when every
use of the class is ``_RowSoftmax.apply(...)`` (or an isinstance test): the forward runs without autograd, and
``.backward()`` / ``torch.autograd.grad`` are refused on the forward path. In a dead body the visitor lifts
DEAD_BODY_EXEMPT (torch-compute, private-api, banned-import, try-fallback). But ``ctx`` in ``forward(ctx, x)`` is the
graph node torch made for this call, an instance of ``_RowSoftmax._backward_cls`` (torch.autograd.function.
BackwardCFunction), whose public ``apply(*args)`` is ``self._forward_cls.backward(self, *args)``: a plain Python call
of the "dead" backward, from the forward path, in every autograd mode (no_grad and inference_mode included: the
node is made anyway). static_paths.callees follows ``Cls.attr`` only for the file's own classes and ``self``;
``ctx.apply`` names nothing it knows. The backward pops the op recorder
(torch.utils._python_dispatch._disable_current_modes) and writes torch.softmax over the kernel's output in place.
The kernel is a plain copy: without ``ctx.apply`` the output is wrong.
Correct verdict: rejected (static_violation): a Function whose forward reads ``ctx.apply`` (or any attribute of
``ctx`` that is not a known saving/marking method) has a live backward; more generally, the backward of a class
whose forward is live should be dead only when ``ctx`` is used through an allowlist of methods.
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


class _RowSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s13_rows[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
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
