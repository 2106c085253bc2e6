"""Environment variables that say where a process runs, not how a library should behave.

Candidates may read environment flags (``os.environ.get``, ``os.getenv``, ``"X" in os.environ``): libraries read
``TRITON_*``, ``CUDA_*`` and their own switches, often by computed names. The variables a login sets -- the home,
the user, the working folder, the shell, the host -- configure nothing a kernel does; their only use to a kernel is
telling one machine (the verifier's sandbox, whose identity is fixed) from another (a user's). A read of one, by a
literal name or one that folds to it (``"HO" + "ME"``), is refused; so is one a helper's parameter carries, where
a call of the helper in the file passes such a name (``def _flag(name): return os.environ.get(name)`` called as
``_flag("HOME")``). A name the checker cannot fold is left to the run, where each process runs as an account drawn
for it (evaluator/roles.py), the limit docs/verifier.md states.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from evaluator.static_environ import ENVIRON
from evaluator.static_fold import Lookup, Resolve, fold_strings

Report = Callable[[str, ast.AST, str], None]

IDENTITY = frozenset({
    "HOME", "USER", "LOGNAME", "USERNAME", "PWD", "OLDPWD", "SHELL", "SHLVL", "_", "HOSTNAME", "HOST", "TMPDIR",
    "TEMP", "TMP", "MAIL", "DISPLAY", "TERM", "PATH", "LD_LIBRARY_PATH", "CONDA_PREFIX", "VIRTUAL_ENV",
})
IDENTITY_PREFIXES = ("SSH_", "XDG_", "SUDO_", "KERNELEVO")
READERS = frozenset({"os.environ.get", "os.getenv"})


def is_identity(name: str) -> bool:
    """Whether reading variable ``name`` can only tell where the process runs (pure)."""
    return name in IDENTITY or name.startswith(IDENTITY_PREFIXES)


def read_names(node: ast.AST, resolve: Resolve, lookup: Lookup) -> list[str] | None:
    """The names an environment read at ``node`` may ask for (a reader call or an ``in os.environ`` test), as far
    as they fold; None when ``node`` reads no variable."""
    if isinstance(node, ast.Call) and node.args and resolve(node.func) in READERS:
        return fold_strings(node.args[0], lookup, resolve) or []
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.In | ast.NotIn) and \
            resolve(node.comparators[0]) == ENVIRON:  # fmt: skip
        return fold_strings(node.left, lookup, resolve) or []
    return None


def check_identity_reads(tree: ast.Module, resolve: Resolve, lookup: Lookup, report: Report) -> None:
    """Report every environment read of an identity variable, by its own name or a helper's callers'."""
    helpers = _helper_lookups(tree, lookup)
    for node in ast.walk(tree):
        names = read_names(node, resolve, lookup) or []
        for overlay in helpers.get(id(node), ()):
            names += read_names(node, resolve, overlay) or []
        found = sorted({n for n in names if is_identity(n)})
        if found:
            report("introspection", node, f"reads ${found[0]}, which says where the process runs (the verifier's "
                   "sandbox or a user's machine) and configures nothing a kernel does; remove the read (flags such "
                   "as TRITON_* or your library's own are fine)")


def _helper_lookups(tree: ast.Module, lookup: Lookup) -> dict[int, list[Lookup]]:
    """For each node inside a function: lookups that bind the function's parameters to what one call of it in the
    file passes (positionally, by keyword, or the parameter's default), one per call site (pure)."""
    functions = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)]
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call)]
    out: dict[int, list[Lookup]] = {}
    for function in functions:
        params = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
        defaults = dict(zip(params[len(params) - len(function.args.defaults):], function.args.defaults))
        overlays = []
        for call in calls:
            called = call.func.id if isinstance(call.func, ast.Name) else \
                call.func.attr if isinstance(call.func, ast.Attribute) else None
            if called != function.name:
                continue
            positional = params[1:] if isinstance(call.func, ast.Attribute) and params[:1] in (["self"], ["cls"]) \
                else params
            bound: dict[str, ast.expr] = dict(defaults)
            bound.update(zip(positional, call.args))
            bound.update({k.arg: k.value for k in call.keywords if k.arg})
            overlays.append(_overlay(bound, lookup))
        if overlays:
            for node in ast.walk(function):
                out.setdefault(id(node), []).extend(overlays)
    return out


def _overlay(bound: dict[str, ast.expr], lookup: Lookup) -> Lookup:
    def find(name: str) -> list[ast.expr] | None:
        return [bound[name]] if name in bound else lookup(name)
    return find
