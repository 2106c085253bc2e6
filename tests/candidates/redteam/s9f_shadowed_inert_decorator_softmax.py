"""EXPLOIT (static layer, "a function nothing running refers to"): a decorator spelled like a builtin wrapper.

evaluator/static_liveness.py keeps a decorated function dead unless a decorator is "not known to be inert", and
``inert_decorators`` reads a decorator by ``resolve(...) or target.id``: a plain name that no import binds counts by
its spelling, so ``@staticmethod`` is inert whatever ``staticmethod`` is in the file. Here ``staticmethod`` is the
candidate's own module-level function, which keeps the function it is handed in ``HOOKS``. ``rows`` is then "dead"
(nothing names it) and, since 2fd6120, its body is exempt from private-api and torch-compute: the private
``torch.utils._python_dispatch._disable_current_modes`` pops the op recorder around ``torch.softmax``. Forward calls
``HOOKS[0](x)``. A decoy kernel copies the answer. Statically clean, and accepted on CPU.
Correct verdict: rejected (static_violation): torch compute and a private API on the forward path.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

HOOKS = []


def staticmethod(fn):
    HOOKS.append(fn)
    return fn


@triton.jit
def s9f_sid_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


@staticmethod
def rows(x):
    with torch.utils._python_dispatch._disable_current_modes():
        return torch.softmax(x, dim=-1)


class ModelNew(nn.Module):
    def forward(self, x):
        y = HOOKS[0](x)
        out = torch.empty_like(y)
        n = y.numel()
        s9f_sid_copy[(triton.cdiv(n, 1024),)](y, out, n, BLOCK=1024)
        return out
