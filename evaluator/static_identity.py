"""Environment variables that say where a process runs, not how a library should behave.

Candidates may read environment flags (``os.environ.get``, ``os.getenv``, ``"X" in os.environ``): libraries read
``TRITON_*``, ``CUDA_*`` and their own switches, often by computed names. The variables a login sets -- the home,
the user, the working folder, the shell, the host -- configure nothing a kernel does; their only use to a kernel is
telling one machine (the verifier's sandbox, whose identity is fixed) from another (a user's). A read of one, by a
literal name or one that folds to it (``"HO" + "ME"``), is refused. A name the checker cannot fold is left to the
run: both verifier processes then answer alike, which is the limit docs/verifier.md states.
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
    """Report every environment read of an identity variable."""
    for node in ast.walk(tree):
        names = read_names(node, resolve, lookup)
        found = sorted({n for n in names or () if is_identity(n)})
        if found:
            report("introspection", node, f"reads ${found[0]}, which says where the process runs (the verifier's "
                   "sandbox or a user's machine) and configures nothing a kernel does; remove the read (flags such "
                   "as TRITON_* or your library's own are fine)")
