"""EXPLOIT (static layer, "code that never runs"): a DTensor branch whose ``isinstance`` is the candidate's own.

evaluator/static_liveness.py (``Branches.never_true``) judges the body of ``if isinstance(x, DTensor):`` code that
never runs (no DTensor exists in the verifier) and lifts banned-import, torch-compute and try-fallback there. It
reads the call by its spelling (``test.func.id == "isinstance"``) and never asks whether ``isinstance`` is the
builtin, as evaluator/static_absent.py does for ``hasattr`` ("hasattr rebound" is a tested attack there). A
module-level ``def isinstance(obj, kind): return True`` makes the branch run on every call. Inside, the lifted
banned-import lets ``sys.modules`` hand out the loaded ``torch.utils._python_dispatch`` (the private attribute read
off a subscript is no chain the private-api rule follows), whose ``_disable_current_modes`` pops the op recorder,
and the lifted torch-compute lets ``torch.softmax`` compute the answer. A decoy kernel copies it. Statically clean,
and accepted on CPU (the DTensor rule predates ed2c614; found while red-teaming its liveness changes).
Correct verdict: rejected (static_violation): sys.modules, a private API and torch compute on the forward path.
"""

import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch.distributed.tensor import DTensor


def isinstance(obj, kind):
    return True


@triton.jit
def s9f_isd_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def rows(x):
    if isinstance(x, DTensor):
        with sys.modules["torch.utils._python_dispatch"]._disable_current_modes():
            return torch.softmax(x, dim=-1)
    return x


class ModelNew(nn.Module):
    def forward(self, x):
        y = rows(x)
        out = torch.empty_like(y)
        n = y.numel()
        s9f_isd_copy[(triton.cdiv(n, 1024),)](y, out, n, BLOCK=1024)
        return out
