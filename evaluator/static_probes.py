"""Version and capability probes: the ``try`` statements and helpers that only ask what is installed.

Real kernels ask before they choose: ``try: from triton.language.extra import libdevice`` ...
``except ImportError: HAS_LIBDEVICE = False``, ``try: major, _ = torch.cuda.get_device_capability()``
``except RuntimeError: major = 0``. Such a ``try`` cannot hide a fallback computation: its body only
imports or queries (versions, device properties, ``find_spec``), its handlers only set flags or
constants. A ``try`` around anything else on the forward path is still a fallback (``try-fallback``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from evaluator.static_rules import PROBE_CALLS

Resolve = Callable[[ast.AST], "str | None"]

# Namespaces whose calls and attributes are probes: versions, device properties, installed packages.
_PROBE_NAMESPACES = ("torch.cuda", "torch.xpu", "torch.mps", "torch.mtia", "torch.cpu", "torch.accelerator",
                     "torch.backends", "torch.version", "importlib.util", "importlib.metadata", "packaging.version")
_CONVERSIONS = frozenset({"int", "str", "float", "bool", "tuple", "len", "max", "min", "getattr", "hasattr"})


def is_constant(node: ast.AST) -> bool:
    """A literal value (numbers, strings, None, booleans) or a tuple/list/set of them."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return all(is_constant(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.Not):
        return is_constant(node.operand)
    return False


def _probe_name(dotted: str | None) -> bool:
    if dotted is None:
        return False
    if dotted.endswith(".__version__") or dotted in ("torch.version", "triton.__version__"):
        return True
    return any(dotted == ns or dotted.startswith(ns + ".") for ns in _PROBE_NAMESPACES)


def is_probe_expr(node: ast.AST, resolve: Resolve) -> bool:  # noqa: C901 - one case per expression kind
    """An expression that only reads versions, device facts, installed packages or constants."""
    if is_constant(node) or isinstance(node, ast.Name):
        return True  # a name read here is a value computed before the try (or a flag)
    if isinstance(node, ast.Attribute):
        dotted = resolve(node)
        if dotted is not None:
            return _probe_name(dotted) or dotted.endswith(".__version__")
        return node.attr.isidentifier() and not node.attr.startswith("_") and is_probe_expr(node.value, resolve)
    if isinstance(node, ast.Call):
        func = node.func
        dotted = resolve(func)
        args_ok = all(is_probe_expr(a, resolve) for a in [*node.args, *(k.value for k in node.keywords)])
        if not args_ok:
            return False
        if dotted is not None:
            return _probe_name(dotted) and dotted.rsplit(".", 1)[-1] in PROBE_CALLS
        if isinstance(func, ast.Name):
            return func.id in _CONVERSIONS
        if isinstance(func, ast.Attribute):  # get_device_properties(0).total_memory, Version(v).release
            return func.attr in PROBE_CALLS and is_probe_expr(func.value, resolve)
        return False
    if isinstance(node, ast.Compare):
        return all(is_probe_expr(n, resolve) for n in [node.left, *node.comparators])
    if isinstance(node, ast.BoolOp):
        return all(is_probe_expr(v, resolve) for v in node.values)
    if isinstance(node, ast.UnaryOp | ast.BinOp):
        parts = [node.operand] if isinstance(node, ast.UnaryOp) else [node.left, node.right]
        return all(is_probe_expr(p, resolve) for p in parts)
    if isinstance(node, ast.IfExp):
        return all(is_probe_expr(p, resolve) for p in (node.test, node.body, node.orelse))
    if isinstance(node, ast.Subscript):
        return is_probe_expr(node.value, resolve) and is_probe_expr(node.slice, resolve)
    if isinstance(node, ast.Tuple | ast.List):
        return all(is_probe_expr(e, resolve) for e in node.elts)
    return False


def _flag_targets(targets: list[ast.expr]) -> bool:
    out = []
    for t in targets:
        out.extend(t.elts if isinstance(t, ast.Tuple | ast.List) else [t])
    return all(isinstance(t, ast.Name) for t in out)


def _probe_statements(body: list[ast.stmt], resolve: Resolve, *, handler: bool) -> bool:
    """Statements a probe may hold: imports and queries (body) or flags and constants (handlers)."""
    for stmt in body:
        if isinstance(stmt, ast.Pass | ast.Raise):
            continue
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # a docstring or a bare constant
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            value_ok = is_constant(stmt.value) if handler else is_probe_expr(stmt.value, resolve)
            if _flag_targets(targets) and value_ok:
                continue
            return False
        if isinstance(stmt, ast.Return):
            value = stmt.value
            if value is None or (is_constant(value) if handler else is_probe_expr(value, resolve)):
                continue
            return False
        if isinstance(stmt, ast.Expr) and not handler and is_probe_expr(stmt.value, resolve):
            continue  # a bare query such as torch.cuda.get_device_properties(0)
        if isinstance(stmt, ast.If) and not handler and is_probe_expr(stmt.test, resolve):
            if _probe_statements(stmt.body, resolve, handler=False) and _probe_statements(stmt.orelse, resolve,
                                                                                         handler=False):
                continue
            return False
        return False
    return True


def is_probe_try(node: ast.Try, resolve: Resolve) -> bool:
    """True for a ``try`` that only imports or queries, whose handlers and ``else`` only set flags/constants."""
    if node.finalbody or not node.handlers:
        return False
    if not _probe_statements(node.body, resolve, handler=False):
        return False
    if not all(_probe_statements(h.body, resolve, handler=True) for h in node.handlers):
        return False
    return _probe_statements(node.orelse, resolve, handler=True)
