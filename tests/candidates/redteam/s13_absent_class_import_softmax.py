"""EXPLOIT (static_absent vs an import in a class body): the same hole as s13_absent_global_import_softmax without
``global``: ``import triton.language as E`` in ModelNew's body rebinds ``E`` for the rest of the class body, where
``if hasattr(E, "zeros"):`` redefines ``finish``.

evaluator/static_model.py _import_aliases keeps the first import of ``E`` met breadth-first: the module-level
``import triton.language.extra as E``. The visitor's ``_resolve`` (evaluator/static_visitor.py) treats only function
scopes as shadowing an imported name (``_scoped``: ``function_scope = not isinstance(node, ast.ClassDef |
ast.Module)``), so in the class body ``E`` reads as ``triton.language.extra``; evaluator/static_absent.py
module_lacks answers that it has no ``zeros`` (no attribute, submodule or ``__getattr__``), and the branch is absent:
ABSENT_BRANCH_EXEMPT lifts private-api and torch-compute in the ``def finish`` it holds. When the class statement
runs, ``E`` is the class-level ``triton.language``, ``hasattr`` is True, and the second ``finish`` replaces the
honest one: it pops the op recorder (torch.utils._python_dispatch._disable_current_modes) and writes torch.softmax
over the copy kernel's output. Without it the output is the copy: wrong.
Correct verdict: rejected (static_violation): a name bound by more than one import has no single module (judge
the absent test against every module it may be, or refuse the test), and a class body shadows like any scope.
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


class ModelNew(nn.Module):
    import triton.language as E

    def forward(self, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s13_rows[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return self.finish(out)

    def finish(self, out):
        return out

    if hasattr(E, "zeros"):
        def finish(self, out):
            with torch.utils._python_dispatch._disable_current_modes():
                return out.copy_(torch.softmax(out, dim=-1))
