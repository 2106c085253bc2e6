"""Loggers only log: ``logging.getLogger(...)`` objects used for their message methods and nothing else.

The import policy lets candidates call ``logging.getLogger`` so that library glue can write ``logger.info(...)``.
The logger it returns is the process's shared logger tree, though: ``logger.addHandler(h)`` / ``addFilter(f)``
would install the candidate's object there, and its ``handle``/``filter``/``emit`` would then run whenever anything
in the process logs -- torch and triton included, from frames the checker never sees as the candidate's -- and
``logger.manager`` / ``.parent`` / ``.handlers`` reach every logger and handler the harness configured. So every
use of a name bound to ``logging.getLogger(...)`` (at module or function level: a class attribute is read as
``C.lg``/``self.lg``, which no name lookup follows) and of such a call itself must be a call of one of the message
methods below; anything else (another method, an attribute read or write, the logger handed on) is reported.
Pure function over the AST.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

GET_LOGGER = "logging.getLogger"
MESSAGE_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log",
                             "isEnabledFor", "getEffectiveLevel"})  # fmt: skip
_WHY = ("a logger may only log (logger.debug/info/warning/error/exception/critical/log, isEnabledFor); handlers, "
        "filters, levels and the logger tree are shared with the harness")

Report = Callable[[str, ast.AST, str], None]
Resolve = Callable[[ast.AST], "str | None"]


def check_loggers(tree: ast.Module, resolve: Resolve, parents: dict[int, ast.AST], report: Report) -> None:
    """Report every use of a ``logging.getLogger(...)`` result outside its message methods."""
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and resolve(n.func) == GET_LOGGER]
    names: set[str] = set()
    for call in calls:
        parent = parents.get(id(call))
        in_class = isinstance(parents.get(id(parent)), ast.ClassDef)  # `C.lg`/`self.lg` are no name loads to follow
        if isinstance(parent, ast.Assign) and parent.value is call and not in_class and all(
                isinstance(t, ast.Name) for t in parent.targets):  # fmt: skip
            names.update(t.id for t in parent.targets if isinstance(t, ast.Name))
        elif not _message_call(call, parents):
            report("banned-import", call, f"`{ast.unparse(call)[:60]}` is used beyond logging: {_WHY}")
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and n.id in names and isinstance(n.ctx, ast.Load) and not _message_call(n, parents):
            parent = parents.get(id(n))
            what = f"`{n.id}.{parent.attr}`" if isinstance(parent, ast.Attribute) else f"the logger `{n.id}` as a value"
            report("banned-import", n, f"{what} is not allowed: {_WHY}")


def _message_call(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """``node.<message method>(...)``, called."""
    attr = parents.get(id(node))
    if not (isinstance(attr, ast.Attribute) and attr.value is node and attr.attr in MESSAGE_METHODS):
        return False
    call = parents.get(id(attr))
    return isinstance(call, ast.Call) and call.func is attr and isinstance(attr.ctx, ast.Load)



def plain_loggers(tree: ast.Module, resolve: Resolve) -> frozenset[str]:
    """Names every binding of which, anywhere in the file, is ``name = logging.getLogger(...)`` outside a class body
    (no parameter, import, def, ``global`` or other value): a call ``name.debug(...)`` is a logger's message call
    (``evaluator.static_probes`` lets a probe's handler log with one)."""
    logger_targets: set[int] = set()
    class_attributes: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and resolve(node.value.func) == GET_LOGGER:
            logger_targets.update(id(t) for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ClassDef):
            class_attributes.update(id(n) for item in node.body for n in ast.walk(item) if isinstance(n, ast.Name))
    good: set[str] = set()
    bad: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            ok = id(node) in logger_targets and id(node) not in class_attributes
            (good if ok else bad).add(node.id)
        elif isinstance(node, ast.arg):
            bad.add(node.arg)
        elif isinstance(node, ast.alias):
            bad.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bad.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bad.update(node.names)
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            bad.add(node.name)
    return frozenset(good - bad)
