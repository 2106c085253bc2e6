"""How an expression is used where it stands: called, looked into, compared, or handed on as a value.

Several rules depend less on *what* a name is than on *how* it is used. ``x.softmax(-1)`` is a call the
compute rules judge, while ``f = x.softmax`` hands a bound method to code the checker cannot follow;
``getattr(obj, "shape")`` is plain attribute access, while ``g = getattr`` or ``partial(getattr, x)``
is a lookup by a name known only at run time; ``typing.Optional`` is API use, while ``self.m = typing``
lets ``self.m.sys`` escape every chain check; a ``DTensor`` inside ``isinstance`` only compares types.
:func:`use_of` classifies the position of a node from its parent chain, so each rule says which uses it
allows instead of listing the ones it refuses.
"""

from __future__ import annotations

import ast
import enum


class Use(enum.Enum):
    """The position an expression stands in."""

    CALLED = "called"  # the function of a call: f(...)
    ATTRIBUTE_BASE = "attribute-base"  # the object of an attribute access: obj.name
    LOOKUP_OBJECT = "lookup-object"  # the object of getattr/hasattr: getattr(obj, "name")
    ALIAS = "alias"  # the whole value of a plain assignment to a name: name = value
    TRUTH = "truth"  # only its truth or identity matters: if x, x is None, not x, x == y
    TYPE_CHECK = "type-check"  # the type argument of isinstance/issubclass or an except clause
    ANNOTATION = "annotation"  # inside a type annotation
    DECORATOR = "decorator"  # a decorator expression
    BASE_CLASS = "base-class"  # a base of a class statement
    VALUE = "value"  # anything else: stored, passed, returned, computed with


def parent_map(tree: ast.AST) -> dict[int, ast.AST]:
    """``id(child) -> parent`` for every node of the tree."""
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    return parents


def _is_call_to(node: ast.AST, names: tuple[str, ...]) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names


def in_annotation(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """True when ``node`` is (part of) an argument, return or variable annotation."""
    child, parent = node, parents.get(id(node))
    while parent is not None:
        if isinstance(parent, ast.arg) and parent.annotation is child:
            return True
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef) and parent.returns is child:
            return True
        if isinstance(parent, ast.AnnAssign) and parent.annotation is child:
            return True
        if not isinstance(parent, ast.expr):
            return False
        child, parent = parent, parents.get(id(parent))
    return False


def in_inert_annotation(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """``node`` is (part of) an annotation whose value running code never gets back: a parameter or return
    annotation, or a variable annotation inside a function (never evaluated). A variable annotation in a class body
    (or at module level) is a run-time value: ``dataclasses.fields(C)[0].type`` (NamedTuple, TypedDict alike) hands
    back the class it names, so a class named there is referred to."""
    if not in_annotation(node, parents):
        return False
    child, parent = node, parents.get(id(node))
    while not (isinstance(parent, ast.AnnAssign) and parent.annotation is child):
        if isinstance(parent, ast.arg | ast.FunctionDef | ast.AsyncFunctionDef) or parent is None:
            return True  # a parameter or return annotation
        child, parent = parent, parents.get(id(parent))
    while parent is not None:
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return True
        if isinstance(parent, ast.ClassDef):
            return False
        parent = parents.get(id(parent))
    return False  # module level


def use_of(node: ast.AST, parents: dict[int, ast.AST]) -> Use:  # noqa: C901 - one case per parent kind
    """The position ``node`` stands in (see :class:`Use`)."""
    parent = parents.get(id(node))
    if parent is None:
        return Use.VALUE
    if isinstance(parent, ast.Call):
        if parent.func is node:
            return Use.CALLED
        if _is_call_to(parent, ("getattr", "hasattr")) and parent.args[:1] == [node]:
            return Use.LOOKUP_OBJECT
        if _is_call_to(parent, ("isinstance", "issubclass")) and parent.args[1:2] == [node]:
            return Use.TYPE_CHECK
        if _is_call_to(parent, ("bool",)) and parent.args == [node]:
            return use_truth(parent, parents)
        return Use.VALUE
    if isinstance(parent, ast.Attribute):
        return Use.ATTRIBUTE_BASE
    if isinstance(parent, ast.Tuple) and isinstance(parents.get(id(parent)), ast.Call | ast.ExceptHandler):
        outer = use_of(parent, parents)
        return outer if outer is Use.TYPE_CHECK else Use.VALUE
    if isinstance(parent, ast.ExceptHandler) and parent.type is node:
        return Use.TYPE_CHECK
    if isinstance(parent, ast.Assign | ast.AnnAssign | ast.NamedExpr) and parent.value is node:
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        return Use.ALIAS if all(isinstance(t, ast.Name) for t in targets) else Use.VALUE
    if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node in parent.decorator_list:
        return Use.DECORATOR
    if isinstance(parent, ast.ClassDef) and node in parent.bases:
        return Use.BASE_CLASS
    if in_annotation(node, parents):
        return Use.ANNOTATION
    return use_truth(node, parents)


def use_truth(node: ast.AST, parents: dict[int, ast.AST]) -> Use:
    """``TRUTH`` when only the truth or identity of ``node`` can matter where it stands, else ``VALUE``."""
    parent = parents.get(id(node))
    if isinstance(parent, ast.Compare):
        return Use.TRUTH
    if isinstance(parent, ast.If | ast.While | ast.IfExp | ast.Assert) and parent.test is node:
        return Use.TRUTH
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
        return Use.TRUTH
    if isinstance(parent, ast.BoolOp):
        return use_truth(parent, parents)  # `a or b` hands on a or b unless only its truth is used
    return Use.VALUE


def name_loads(scope: ast.AST, name: str) -> list[ast.Name]:
    """Every load of ``name`` in ``scope`` (nested functions included: they see the same binding)."""
    return [n for n in ast.walk(scope) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]


def assigned_once(scope: ast.AST, name: str) -> bool:
    """True when ``name`` is bound exactly once in ``scope`` (so its value is the one expression seen)."""
    binds = 0
    for n in ast.walk(scope):
        if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load):
            binds += 1
        elif isinstance(n, ast.arg) and n.arg == name:
            binds += 1
    return binds == 1


def enclosing_scope(node: ast.AST, parents: dict[int, ast.AST]) -> ast.AST:
    """The function, lambda or module whose namespace ``node`` is evaluated in."""
    parent = parents.get(id(node))
    while parent is not None and not isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        if isinstance(parent, ast.Module):
            return parent
        parent = parents.get(id(parent))
    return parent if parent is not None else node


def binding_sites(root: ast.AST, imports: set[int] | frozenset[int] = frozenset()) -> list[tuple[str, ast.AST]]:
    """(name, node) for every place a name is bound under ``root``, in any scope and any way: assignment, loop,
    ``with`` and walrus targets, parameters, defs and classes, imports (``imports``: ids of alias nodes left out),
    exception handlers, match captures. Not ``global``/``nonlocal``, which declare and bind nothing."""
    out: list[tuple[str, ast.AST]] = []
    for node in ast.walk(root):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            out.append((node.id, node))
        elif isinstance(node, ast.alias):
            if id(node) not in imports:
                out.append(((node.asname or node.name).split(".")[0], node))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.append((node.name, node))
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            out.append((node.name, node))
        elif isinstance(node, ast.MatchMapping) and node.rest:
            out.append((node.rest, node))
        elif isinstance(node, ast.arg):
            out.append((node.arg, node))
    return out


def binding_counts(tree: ast.Module, imports: set[int] | frozenset[int] = frozenset()) -> dict[str, int]:
    """How many times each name is bound anywhere in the file, in any scope and any way (``imports``: ids of alias
    nodes whose bindings are left out); a ``global``/``nonlocal`` declaration counts as one more."""
    counts: dict[str, int] = {}
    declared = [name for n in ast.walk(tree) if isinstance(n, ast.Global | ast.Nonlocal) for name in n.names]
    for name in [name for name, _ in binding_sites(tree, imports)] + declared:
        counts[name] = counts.get(name, 0) + 1
    return counts


def module_bindings(tree: ast.Module) -> set[str]:
    """The names the module's own top-level code always binds when it runs: a statement's bindings, in both
    branches of a module-level ``if``, in a ``try`` body and each of its handlers (or its ``finally``), a ``with``'s
    ``as`` targets (not its body, which a context manager may cut short); never in a loop (``for np in (): pass``
    binds nothing) nor what a def, class, lambda or comprehension binds inside itself. A name deleted or declared
    ``global`` anywhere is left out."""
    unsure = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Del)}
    unsure |= {name for n in ast.walk(tree) if isinstance(n, ast.Global | ast.Nonlocal) for name in n.names}
    return (_always_bound(tree.body) or set()) - unsure


def _both(a: set[str] | None, b: set[str] | None) -> set[str] | None:
    """What two alternative blocks both bind (``None``: a block that never completes, so binds anything)."""
    return b if a is None else a if b is None else a & b


def _always_bound(stmts: list[ast.stmt]) -> set[str] | None:
    """The names ``stmts`` bind on every path that completes; ``None`` where none completes (a ``raise``)."""
    found: set[str] = set()
    for stmt in stmts:
        if isinstance(stmt, ast.Raise):
            return None
        if isinstance(stmt, ast.If):
            both = _both(_always_bound(stmt.body), _always_bound(stmt.orelse))
            if both is None:
                return None
            found |= both
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            body, orelse = getattr(stmt, "body", []), getattr(stmt, "orelse", [])
            handled = _always_bound([*body, *orelse])
            for handler in getattr(stmt, "handlers", []):
                handled = _both(handled, _always_bound(handler.body))
            final = _always_bound(getattr(stmt, "finalbody", []))
            if handled is None or final is None:
                return None
            found |= handled | final
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            # only the ``as`` targets: a context manager may swallow whatever the body raises
            # (``contextlib.suppress``, any ``__exit__`` returning True), so the body may stop anywhere and go on
            found |= {n for item in stmt.items if item.optional_vars is not None for n in _stored(item.optional_vars)}
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(stmt.name)
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            found |= {(a.asname or a.name).split(".")[0] for a in stmt.names if a.name != "*"}
        elif isinstance(stmt, ast.Assign | ast.AnnAssign) and getattr(stmt, "value", None) is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            found |= {n for t in targets for n in _stored(t)}
    return found


def _stored(target: ast.expr) -> set[str]:
    """The names an assignment target binds: the names it stores (``a, *b``), not those a subscript or attribute
    target reads (``table[1 or np] = 0`` reads ``np`` and never evaluates it)."""
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def main_guard(node: ast.AST, tree: ast.Module, parents: dict[int, ast.AST]) -> bool:
    """``if __name__ == "__main__":`` at module level, in a file that never binds ``__name__``: the verifier
    imports the candidate under a private name (``globals()``, ``sys.modules`` and ``setattr`` are refused), so
    the block never runs there, and what only it refers to is dead (a tutorial's test and benchmark helpers)."""
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(node, ast.If) and isinstance(parents.get(id(node)), ast.Module) and isinstance(test, ast.Compare)
            and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__" and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__" and not _binds_module_name(tree))  # fmt: skip


def _binds_module_name(tree: ast.AST) -> bool:
    """True when anything in the file could rebind ``__name__`` (assignment, ``global``, import, def, class, loop,
    ``with``/``except``/walrus/match targets, a parameter): then ``__name__ == "__main__"`` decides nothing."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "__name__" and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, ast.Global | ast.Nonlocal) and "__name__" in node.names:
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name) == "__name__":
            return True
        named = getattr(node, "name", None) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
                                                           | ast.ExceptHandler | ast.MatchAs | ast.MatchStar) else None
        if named == "__name__" or (isinstance(node, ast.arg) and node.arg == "__name__"):
            return True
    return False
