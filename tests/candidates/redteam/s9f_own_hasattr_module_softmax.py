"""EXPLOIT (static layer, builtins read by spelling): the candidate's own ``hasattr`` is handed a module.

A module may be the first argument of ``getattr``/``hasattr`` (static_lookups.MODULE_USES holds Use.LOOKUP_OBJECT),
and evaluator/static_uses.py ``use_of`` tells that position by the call's spelling. evaluator/static_absent.py asks
that the file bind no other ``hasattr`` before it trusts one (its "hasattr rebound" attack), but the module-use rule
does not: a module-level ``def hasattr(obj, name)`` that keeps ``obj`` receives the typing module from ``hasattr(typing,
"tilelang")`` (a feature test in appearance). Forward then holds the module in a plain local: ``lib.sys.modules``
hands out ``torch.utils._python_dispatch``, whose ``_disable_current_modes`` pops the op recorder, and ``builtins``,
whose ``getattr(torch, "soft" + "max")`` runs the softmax. A decoy kernel copies it. Statically clean, and accepted
on CPU (an older hole, of the same kind as s9f_isinstance_shadow_dtensor_softmax).
Correct verdict: rejected (static_violation): a module handed on as a value, sys reached from it.
"""

import typing

import torch
import torch.nn as nn
import triton
import triton.language as tl

SEEN = []


def hasattr(obj, name):
    SEEN.append(obj)
    return False


@triton.jit
def s9f_ohm_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def rows(x):
    for lib in SEEN:
        mods = lib.sys.modules
        with mods["torch.utils._python_dispatch"]._disable_current_modes():
            return mods["builtins"].getattr(mods["torch"], "soft" + "max")(x, -1)
    return x


class ModelNew(nn.Module):
    def forward(self, x):
        y = rows(x)
        out = torch.empty_like(y)
        n = y.numel()
        s9f_ohm_copy[(triton.cdiv(n, 1024),)](y, out, n, BLOCK=1024)
        return out


HAS_TILELANG = hasattr(typing, "tilelang")
