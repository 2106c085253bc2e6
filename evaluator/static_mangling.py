"""Class-private names as Python sees them: the checker reads the names the interpreter looks up, not their spelling.

Inside a class body (its methods, lambdas, comprehensions and nested functions included) Python rewrites every
identifier spelled ``__name`` (two leading underscores, not ending in two) into ``_Class__name``, reads of globals
included: forward's ``__ROWS["r"](x)`` in ``class ModelNew`` reads the module-level ``_ModelNew__ROWS``. A checker
that matched the spelling would take that table for one nothing reads. :func:`mangle` rewrites the parsed tree in
place the way the compiler does, once, before any rule looks at it; the class's decorators, bases and keywords are
evaluated outside its body and keep their spelling.
"""

from __future__ import annotations

import ast


def mangled(name: str, owner: str | None) -> str:
    """``name`` as the compiler stores it inside a class whose name without leading underscores is ``owner`` (pure)."""
    if not owner or not name.startswith("__") or name.endswith("__") or "." in name:
        return name
    return f"_{owner}{name}"


class _Mangler(ast.NodeVisitor):
    def __init__(self, lazy_annotations: bool) -> None:
        self.owner: str | None = None  # the enclosing class's name without leading underscores
        # ``from __future__ import annotations``: annotations are kept as their source text, evaluated later (by
        # typing or torch.library) in the module's namespace, unmangled
        self.lazy_annotations = lazy_annotations

    def _annotation(self, node: ast.expr | None) -> None:
        if node is not None and not self.lazy_annotations:
            self.visit(node)

    def _m(self, name: str) -> str:
        return mangled(name, self.owner)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for outside in (*node.decorator_list, *node.bases, *(k.value for k in node.keywords)):
            self.visit(outside)
        written = node.name
        node.name = self._m(written)
        outer, self.owner = self.owner, written.lstrip("_") or None
        for stmt in node.body:
            self.visit(stmt)
        self.owner = outer

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        node.name = self._m(node.name)
        for decorator in node.decorator_list:
            self.visit(decorator)
        self.visit(node.args)
        self._annotation(node.returns)
        for stmt in node.body:
            self.visit(stmt)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.visit(node.target)
        self._annotation(node.annotation)
        if node.value is not None:
            self.visit(node.value)

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_Name(self, node: ast.Name) -> None:
        node.id = self._m(node.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        node.attr = self._m(node.attr)
        self.generic_visit(node)

    def visit_arg(self, node: ast.arg) -> None:
        node.arg = self._m(node.arg)
        self._annotation(node.annotation)

    # A call's keyword names are not mangled (``g(__kw=1)`` passes ``__kw``).

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:  # ``import __m`` imports and binds ``_C__m`` (the compiler mangles both)
            if alias.asname is None:
                alias.name = self._m(alias.name)
            else:
                alias.asname = self._m(alias.asname)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:  # ``from m import __x [as __y]`` fetches ``_C__x`` and binds ``_C__x`` [``_C__y``]
            alias.name = self._m(alias.name)
            if alias.asname is not None:
                alias.asname = self._m(alias.asname)

    def visit_Global(self, node: ast.Global) -> None:
        node.names = [self._m(n) for n in node.names]

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        node.names = [self._m(n) for n in node.names]

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name is not None:
            node.name = self._m(node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name is not None:
            node.name = self._m(node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name is not None:
            node.name = self._m(node.name)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        if node.rest is not None:
            node.rest = self._m(node.rest)
        self.generic_visit(node)


def mangle(tree: ast.Module) -> ast.Module:
    """Rewrite ``tree`` in place with every class-private name as the compiler stores it (annotations of a module
    under ``from __future__ import annotations`` stay as written: they are evaluated later, unmangled); returns
    ``tree``."""
    lazy = any(isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__" and
               any(alias.name == "annotations" for alias in stmt.names) for stmt in tree.body)  # fmt: skip
    _Mangler(lazy).visit(tree)
    return tree
