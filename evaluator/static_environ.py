"""Environment writes a candidate may make: pinning Triton's fp32 ``tl.dot`` to full IEEE precision at import.

Candidates may only read the environment (``os.environ.get``, ``os.getenv``, ``"X" in os.environ``): a write could
steer what libraries do later (Triton's ``$CC``, ``TRITON_INTERPRET``, ``TRITON_*_PATH``) or hand the environment on.
fla's ``fla.utils`` makes one write on NVIDIA GPUs older than Ampere, which have no TF32 units::

    if IS_NVIDIA and not IS_TF32_SUPPORTED:
        os.environ['TRITON_F32_DEFAULT'] = 'ieee'

``TRITON_F32_DEFAULT`` is the default ``input_precision`` of ``tl.dot`` on fp32 operands, read by Triton when it
compiles a kernel; ``"ieee"`` is the strictest there is (no TF32 rounding of the inputs), so the only effect the
write can have is on the candidate's own kernels, which then compute more exactly and no faster. Nothing of the
verifier reads it in the candidate process (the reference and the timing baselines run in their own processes),
and a constant written tells the candidate nothing it did not know.

Accepted: a plain assignment statement at module level (inside ``if``/``try`` there too), one target, the
subscript ``os.environ["TRITON_F32_DEFAULT"]`` with both key and value string literals from :data:`PINS`. Still
refused: any other key (``TRITON_INTERPRET``, ``CC``), any other value (``"tf32"``, ``"tf32x3"``), a key or value
computed or named, a write inside a function (it would run again, wherever that function is called from),
augmented, chained or unpacking assignments, ``del``, ``os.environ.update``/``setdefault``/``pop``, ``os.putenv``.

At run time the candidate process still refuses every environment change (the audit hook's ``os.putenv`` event
and the environment snapshot, ``evaluator/sandboxed/guards.py``): on a GPU older than Ampere the branch above runs
and the candidate fails there; on the GPUs the verifier runs on (Ampere and later) and on CPU it never runs.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

ENVIRON = "os.environ"
# (variable, value) a candidate may write: only settings that make its own kernels stricter.
PINS = frozenset({("TRITON_F32_DEFAULT", "ieee")})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _module_level(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    parent = parents.get(id(node))
    while parent is not None:
        if isinstance(parent, _SCOPES):
            return False
        if isinstance(parent, ast.Module):
            return True
        parent = parents.get(id(parent))
    return False


def precision_pin(node: ast.AST, resolve: Callable[[ast.AST], str | None], parents: dict[int, ast.AST]) -> bool:
    """``node`` (the ``os.environ`` expression) is the object of ``os.environ["TRITON_F32_DEFAULT"] = "ieee"``, a
    module-level statement of its own (module docstring)."""
    sub = parents.get(id(node))
    if not (isinstance(sub, ast.Subscript) and sub.value is node and isinstance(sub.ctx, ast.Store)):
        return False
    stmt = parents.get(id(sub))
    if not (isinstance(stmt, ast.Assign) and stmt.targets == [sub]) or resolve(node) != ENVIRON:
        return False
    key, value = sub.slice, stmt.value
    if not (isinstance(key, ast.Constant) and isinstance(value, ast.Constant)):
        return False
    return (key.value, value.value) in PINS and _module_level(stmt, parents)
