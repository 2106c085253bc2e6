"""Imports that fail wherever the candidate runs, decided from the import statement alone.

An import of a module outside the allowlist that is not installed, or of a third-party package the candidate
process's import wrappers never let through, raises ImportError in every guarded candidate process (Liger's ``try:
from transformers.utils import ...``): evaluator.static_optional lets such an import stand where its handler binds
only constants or placeholders. Not where the handler defines a function: in a user's program (and in the verifier's
plain process, which has no import wrappers) the import may succeed, and the library's function would run instead
of the fallback the verifier judged (red team s31: fla's PyTorch reference norm behind an honest Triton fallback).

"Installed" is asked of the Python installation the candidate process shares (``importlib.util.find_spec`` of the
top-level name, which imports nothing).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import sys

from evaluator.import_policy import RUNTIME_IMPORT_ROOTS
from evaluator.static_rules import module_allowed

_HARNESS = __name__.split(".")[0]  # `evaluator`: loaded in every candidate process, never to be assumed refused
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


@functools.lru_cache(maxsize=256)
def installed(module: str) -> bool:
    """True when the top-level package of ``module`` can be found (standard library included)."""
    root = module.split(".")[0]  # "pytorch-triton-xpu" (a distribution's name) is searched like any other
    if root in sys.stdlib_module_names or root in sys.modules:
        return True
    try:
        return importlib.util.find_spec(root) is not None
    except (ImportError, ValueError):
        return True  # cannot tell: treat as installed (the strict answer)


def refused_everywhere(module: str) -> bool:
    """An import of ``module`` from the candidate's file raises ImportError wherever the candidate runs: it is
    outside the allowlist and either not installed, or a third-party package the run time never lets candidates
    import (the candidate process's import wrappers refuse it whether or not it is loaded already), so the answer
    does not depend on which packages the machine happens to have."""
    if module_allowed(module):
        return False
    root = module.split(".")[0]
    if root == _HARNESS or root.startswith("_"):
        return False  # the verifier's own package and private/dunder roots (__main__ is the harness's script)
    if not installed(module):
        return True
    # The standard library stays under the stricter rule below (its gc, ctypes, inspect are the tools that
    # would defeat the in-process guards, and this layer must hold if those guards are defeated).
    return root not in RUNTIME_IMPORT_ROOTS and root not in sys.stdlib_module_names


def always_fails(node: ast.AST) -> bool:
    """An import statement that raises ImportError wherever the candidate runs (:func:`refused_everywhere`)."""
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        return not node.level and bool(module) and refused_everywhere(module)
    if isinstance(node, ast.Import):  # names are imported left to right: only a refused first one stops them all
        return bool(node.names) and refused_everywhere(node.names[0].name)
    return False


def catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(t, ast.Name) and t.id in _IMPORT_ERRORS for t in types)
