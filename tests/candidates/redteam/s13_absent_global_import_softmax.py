"""EXPLOIT (static_absent vs a second import of the same name): ``hasattr(E, "zeros")`` is judged on the module the
file's FIRST import of ``E`` binds, but a function rebinds the global ``E`` with another import before the test.

evaluator/static_model.py _import_aliases walks the tree breadth-first and keeps the first import of each name as its
alias (``E`` -> ``triton.language.extra``; later imports are only "alternatives", which the import rules read but
``resolve`` does not). evaluator/static_absent.py absent_attribute resolves the hasattr owner with the visitor's
``_resolve`` (evaluator/static_visitor.py): ``E`` is not "shadowed" in ``s13_finish`` because the function declares
``global E`` (shadowed = names bound in the scope minus its globals), so it reads as ``triton.language.extra``, a
loaded package with no attribute, submodule or ``__getattr__`` named ``zeros``: module_lacks answers True, the body
is an absent branch (ABSENT_BRANCH_EXEMPT lifts private-api, torch-compute, patching, banned-import). At run time
``import triton.language as E`` (allowed, in the function, declared global) runs first, so ``hasattr(E, "zeros")``
is True wherever the candidate runs: the branch pops the op recorder (torch.utils._python_dispatch.
_disable_current_modes) and writes torch.softmax over the copy kernel's output. Without the branch the output is
the copy: wrong.
Correct verdict: rejected (static_violation): a name bound by more than one import (or declared ``global`` and
imported in a function) has no single module; absent_attribute must hold for every import of the owner's name (or
refuse such rebinding of an imported name, as an assignment is refused).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl
import triton.language.extra as E  # noqa: F401 - what the checker resolves E to


@triton.jit
def s13_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    v = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + offs, v, mask=mask)


def s13_finish(out):
    global E
    import triton.language as E
    if hasattr(E, "zeros"):
        with torch.utils._python_dispatch._disable_current_modes():
            out.copy_(torch.softmax(out, dim=-1))
    return out


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s13_rows[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return s13_finish(out)
