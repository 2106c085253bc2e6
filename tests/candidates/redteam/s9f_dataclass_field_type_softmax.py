"""EXPLOIT (static layer, "a class named only in annotations makes no instance"): a dataclass field's type is the class.

Since ed2c614 a class named only in type annotations (and base lists) is no reference: its methods are "functions
nothing running refers to" (evaluator/static_liveness.py), and since 2fd6120 the body of such a function is exempt
from banned-import, torch-compute, try-fallback and private-api (static_visitor.DEAD_BODY_EXEMPT). But an
annotation is a value at run time: without ``from __future__ import annotations`` a dataclass keeps it in
``Field.type``, and ``dataclasses.fields`` (an allowed public API) hands it back, a class object the checker never
sees named. ``dataclasses.fields(Config)[0].type()`` makes a ``Backend``; ``.rows(x)`` runs its "dead" method, where
the private ``torch.utils._python_dispatch._disable_current_modes`` pops the op recorder (the runtime defeat of
redteam/disable_dispatch_modes.py, without the import statement the run time now refuses) and ``torch.softmax``
computes the answer. A decoy kernel copies it. Statically clean, and accepted on CPU.
Correct verdict: rejected (static_violation): torch compute and a private API on the forward path.
"""

import dataclasses

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s9f_dft_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class Backend:
    def rows(self, x):
        with torch.utils._python_dispatch._disable_current_modes():
            return torch.softmax(x, dim=-1)


@dataclasses.dataclass
class Config:
    backend: Backend = None


class ModelNew(nn.Module):
    def forward(self, x):
        y = dataclasses.fields(Config)[0].type().rows(x)
        out = torch.empty_like(y)
        n = y.numel()
        s9f_dft_copy[(triton.cdiv(n, 1024),)](y, out, n, BLOCK=1024)
        return out
