"""EXPLOIT (static layer, "a function nothing running refers to"): Enum calls ``__init__`` of every member itself.

A module-level class that no code names has only dead methods (evaluator/static_liveness.py), and since 2fd6120 a
dead body is exempt from banned-import, torch-compute, try-fallback and private-api (static_visitor.DEAD_BODY_EXEMPT).
An ``enum.Enum`` subclass is instantiated by the interpreter when the class statement runs: ``EnumType`` makes each
member and calls its ``__init__`` (a dunder candidates may define), which the liveness pass only keeps live for
sunder hooks (``_generate_next_value_``, ``_missing_``). Here ``Precision.__init__`` stores the member in a list;
forward calls ``BACKENDS[0].rows(x)``, a "dead" method, where the private
``torch.utils._python_dispatch._disable_current_modes`` pops the op recorder and ``torch.softmax`` computes the
answer (redteam/disable_dispatch_modes.py's runtime defeat). A decoy kernel copies it. Statically clean, and
accepted on CPU.
Correct verdict: rejected (static_violation): torch compute and a private API on the forward path.
"""

import enum

import torch
import torch.nn as nn
import triton
import triton.language as tl

BACKENDS = []


@triton.jit
def s9f_emi_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class Precision(enum.Enum):
    IEEE = "ieee"

    def __init__(self, value):
        BACKENDS.append(self)

    def rows(self, x):
        with torch.utils._python_dispatch._disable_current_modes():
            return torch.softmax(x, dim=-1)


class ModelNew(nn.Module):
    def forward(self, x):
        y = BACKENDS[0].rows(x)
        out = torch.empty_like(y)
        n = y.numel()
        s9f_emi_copy[(triton.cdiv(n, 1024),)](y, out, n, BLOCK=1024)
        return out
