"""EXPLOIT (static layer, "a module-level table no running code reads keeps nothing alive"): a mangled torch op alias.

``_ModelNew__SOFTMAX = torch.softmax`` is a stored reference to a PyTorch op, refused ("keeps a reference to PyTorch
op") until 26b9503. evaluator/static_unread.py now lifts that finding when no running code reads the name, and reads
are found by spelling: forward's ``__SOFTMAX(x, dim=-1)`` holds the Name ``__SOFTMAX``, which Python mangles inside
the class body into a load of the global ``_ModelNew__SOFTMAX``. The checker sees a call of an unknown name and an
unread alias; forward runs torch.softmax and a decoy kernel copies the answer. Statically clean; the run time's op
recorder sees aten softmax and rejects it as cheat_suspected (the wrong layer: no recorder pop here, see
s10u_mangled_table_softmax for the version that is accepted).
Correct verdict: rejected (static_violation): torch compute on the forward path.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_ModelNew__SOFTMAX = torch.softmax


@triton.jit
def s10u_mo_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = __SOFTMAX(x, dim=-1)  # noqa: F821  mangled: the global _ModelNew__SOFTMAX
        out = torch.empty_like(y)
        n = y.numel()
        s10u_mo_copy[(triton.cdiv(n, 1024),)](y, out, n, BLOCK=1024)
        return out
