"""Names that hide Python's builtins.

The static checks read ``isinstance(x, DTensor)``, ``hasattr(torch, "name")``, ``getattr(obj, "attr")`` or
``@staticmethod`` by their spelling, as the builtins they are. A candidate that binds one of those names itself
(``def isinstance(*_): return True``, a ``staticmethod`` that keeps the function, a ``hasattr`` that keeps the module it
is handed) makes the checks judge code that runs as code that cannot, or hands itself what they refuse. No honest
kernel needs to: none of several hundred library and kernel files read for the purpose binds one. So binding any
builtin's name is refused, at any scope and in any form (``def``, ``class``, a parameter, an assignment, a loop or
``with`` target, an import alias, ``except ... as``, a ``match`` capture), except a few names programs commonly reuse
for their own values and the checks never interpret (``input``, ``all``, ``filter``...).
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Iterator

Report = Callable[[str, ast.AST, str], None]

# Builtin names programs reuse for their own values, which no check reads as the builtin.
REUSED = frozenset({"input", "all", "any", "filter", "id", "format", "min", "max", "sum", "abs", "hash", "round",
                    "pow", "divmod", "ord", "chr", "help", "license", "credits", "copyright", "exit", "quit", "dir"})
GUARDED = frozenset(name for name in dir(builtins) if name[:1].islower() and name not in REUSED) | {"__import__"}


def bound_names(node: ast.AST) -> Iterator[str]:
    """The names ``node`` binds (pure)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name
    elif isinstance(node, ast.arg):
        yield node.arg
    elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        yield node.id
    elif isinstance(node, ast.alias):
        yield node.asname or node.name.split(".")[0]
    elif isinstance(node, ast.ExceptHandler) and node.name:
        yield node.name
    elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
        yield node.name
    elif isinstance(node, ast.MatchMapping) and node.rest:
        yield node.rest
    elif isinstance(node, ast.Global | ast.Nonlocal):
        yield from node.names


def check_shadowing(tree: ast.Module, report: Report) -> None:
    """Report every binding of a builtin's name (see the module docstring)."""
    for node in ast.walk(tree):
        for name in bound_names(node):
            if name in GUARDED:
                report("dangerous-builtin", node, f"binds `{name}`, which hides the builtin of that name (the checks "
                       "read it as the builtin); use another name")
