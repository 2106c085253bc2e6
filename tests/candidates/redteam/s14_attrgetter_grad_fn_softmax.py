"""EXPLOIT (static_liveness.GRAPH_NODES vs a name in a string): ``operator.attrgetter("grad_fn")(y)`` reads the
output's autograd node; ``.apply(y)`` on it runs a backward that static_liveness judges dead.

evaluator/static_liveness.py backward_dead looks for graph nodes only as ``ast.Attribute`` nodes whose ``attr`` is in
GRAPH_NODES. ``operator.attrgetter("grad_fn")`` names the attribute in a string constant (no Attribute node);
operator.attrgetter is neither refused nor resolved (the lookup rules fold only ``getattr(x, "const")`` into a dotted
name for resolve, and refuse computed/private names: ``grad_fn`` is a public constant). ``getattr(y, "grad_fn")``
is accepted the same way (checked: ACCEPTED too). So ``_RowSoftmax.backward`` stays dead (private-api and
torch-compute lifted); forward makes a graph in every autograd state (inference_mode(False), enable_grad,
requires_grad_ on a kernel copy) and calls the node's ``apply(y)``, i.e. ``_RowSoftmax.backward``, which pops the op
recorder (torch.utils._python_dispatch._disable_current_modes) and writes torch.softmax over the copy kernel's
output. Without it the output is the copy: wrong.
Correct verdict: rejected (static_violation): a backward is dead only if no string or attribute in the file names a
graph node (``grad_fn``/``next_functions`` as an attribute, a getattr constant, an attrgetter string, a class
pattern keyword), or simply: any Function whose output can leave forward with a graph has a live backward.
"""

import operator

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


def _copy(x):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n_rows, n_cols = x.shape
    s14_rows[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
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
            operator.attrgetter("grad_fn")(y).apply(y)
        return y.detach()
