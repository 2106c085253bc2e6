"""Launches that cannot run: a grid (or CUDA block) that is empty whatever the inputs.

``kernel[(0,)](...)``, ``kernel[()]``, ``kernel[lambda meta: (0,)]`` or ``kernel[(n * 0,)]`` look like
launches (and are counted as calls by the runtime launch counter) but run no program, so the forward
path computes nothing in any kernel. A grid whose emptiness depends on the data (``n // 2**40``) is the
runtime layer's to catch; this module refuses the ones that are empty by construction.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from evaluator.static_fold import fold
from evaluator.static_model import FunctionNode, ModuleModel

Resolve = Callable[[ast.AST], "str | None"]


def _local_values(fn: FunctionNode) -> dict[str, list[ast.expr]]:
    """Names assigned in ``fn`` -> their values; parameters map to [] (unknown)."""
    out: dict[str, list[ast.expr]] = {}
    args = fn.args
    for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if a is not None:
            out[a.arg] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out.setdefault(t.id, []).append(node.value)
                elif isinstance(t, ast.Tuple | ast.List):
                    out.update({e.id: [] for e in t.elts if isinstance(e, ast.Name)})
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
            if isinstance(node.target, ast.Name):
                out.setdefault(node.target.id, [])
                if isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
                    out[node.target.id].append(node.value)
                else:
                    out[node.target.id] = []  # an augmented assignment: the value changes, unknown
        elif isinstance(node, ast.For | ast.comprehension):
            out.update({n.id: [] for n in ast.walk(node.target) if isinstance(n, ast.Name)})
    return out


class _Grid:
    def __init__(self, model: ModuleModel, fn: FunctionNode | None, resolve: Resolve) -> None:
        self.model, self.resolve = model, resolve
        self.local = _local_values(fn) if fn is not None else {}

    def lookup(self, name: str) -> list[ast.expr] | None:
        if name in self.local:
            return self.local[name] or None
        return self.model.constants.get(name)

    def zero(self, node: ast.AST, depth: int = 0) -> bool:  # noqa: C901 - one case per absorbing pattern
        """True when ``node`` is 0 or below for every value it can take (``n * 0``, ``min(0, n)``...)."""
        if depth > 20:
            return False
        values = fold(node, self.lookup, self.resolve)
        if values is not None:
            return bool(values) and all(isinstance(v, int | float) and v <= 0 for v in values)
        if isinstance(node, ast.Name):
            exprs = self.lookup(node.id) or []
            return bool(exprs) and all(self.zero(e, depth + 1) for e in exprs)
        if isinstance(node, ast.BinOp):
            left, right, op = node.left, node.right, node.op
            if isinstance(op, ast.Mult):
                return self.zero(left, depth + 1) and self._nonneg(right) or self.zero(right, depth + 1) and \
                    self._nonneg(left)
            if isinstance(op, ast.FloorDiv | ast.BitAnd | ast.RShift | ast.LShift) and self._exact_zero(left):
                return True
            if isinstance(op, ast.BitAnd) and self._exact_zero(right):
                return True
            if isinstance(op, ast.Sub | ast.BitXor) and ast.dump(left) == ast.dump(right):
                return True
            if isinstance(op, ast.Mod) and fold(right, self.lookup, self.resolve) in ([1], [-1]):
                return True
            return False
        if isinstance(node, ast.Call):
            called = node.func.id if isinstance(node.func, ast.Name) else self.resolve(node.func)
            if called == "min":
                return any(self.zero(a, depth + 1) for a in node.args)
            if called in ("int", "abs", "triton.cdiv", "triton.next_power_of_2") and node.args:
                return called != "triton.next_power_of_2" and self._exact_zero(node.args[0])
            return False
        if isinstance(node, ast.IfExp):
            return self.zero(node.body, depth + 1) and self.zero(node.orelse, depth + 1)
        return False

    def _exact_zero(self, node: ast.AST) -> bool:
        return fold(node, self.lookup, self.resolve) in ([0], [False])

    def _nonneg(self, node: ast.AST) -> bool:
        values = fold(node, self.lookup, self.resolve)
        return values is None or all(isinstance(v, int | float) and v >= 0 for v in values)

    def empty(self, node: ast.AST, depth: int = 0) -> bool:
        """True when the grid expression ``node`` has no programs, whatever the inputs."""
        if depth > 20:
            return False
        if isinstance(node, ast.Tuple | ast.List):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                return False
            return not node.elts or any(self.zero(e) for e in node.elts)
        if isinstance(node, ast.Lambda):
            return self.empty(node.body, depth + 1)
        if isinstance(node, ast.Name):
            if node.id in self.model.functions and "." not in node.id:
                returns = [r.value for r in ast.walk(self.model.functions[node.id])
                           if isinstance(r, ast.Return) and r.value is not None]  # fmt: skip
                return bool(returns) and all(self.empty(r, depth + 1) for r in returns)
            exprs = self.lookup(node.id) or []
            return bool(exprs) and all(self.empty(e, depth + 1) for e in exprs)
        return self.zero(node)


def empty_launch(model: ModuleModel, fn: FunctionNode | None, call: ast.Call, kernel: str,
                 resolve: Resolve) -> str | None:  # fmt: skip
    """Why the launch ``call`` of ``kernel`` runs no program (``"grid"``/``"block"``), or None when it may run."""
    if not isinstance(call.func, ast.Subscript):
        return None
    launch = call.func.slice
    grid = _Grid(model, fn, resolve)
    if model.kernel_backend.get(kernel) == "cuda":
        if isinstance(launch, ast.Tuple) and len(launch.elts) >= 2:
            for label, part in (("grid", launch.elts[0]), ("block", launch.elts[1])):
                if grid.empty(part):
                    return label
            return None
    return "grid" if grid.empty(launch) else None
