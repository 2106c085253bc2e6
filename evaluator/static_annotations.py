"""Annotations are code: typing.get_type_hints, dataclasses and torch.library's schema inference evaluate
them (string annotations included, with the module's globals), so an annotation that calls something
runs it. Only plain type expressions are allowed: names, attributes, subscripts, ``|`` unions, literals.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from evaluator.static_chains import is_module
from evaluator.static_model import resolve
from evaluator.static_rules import ALLOWED_DUNDERS, DANGEROUS_BUILTINS, classify_name
from kernelevo import pyast

Report = Callable[[str, ast.AST, str], None]
_ANNOTATION_NODES = (ast.Name, ast.Attribute, ast.Subscript, ast.Tuple, ast.List, ast.Constant, ast.Load,
                     ast.BinOp, ast.BitOr)  # fmt: skip


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


_TYPING_ROOTS = ("typing.", "collections.abc.")


_LITERALS = frozenset({"typing.Literal", "typing_extensions.Literal"})
# Calls that make a type from a name and types (their first argument is only the new type's name).
_TYPE_FACTORIES = frozenset({"typing.TypeVar", "typing.NewType", "typing.ParamSpec", "typing_extensions.TypeVar"})
_BUILTIN_TYPES = frozenset({"str", "int", "float", "bool", "bytes", "complex", "list", "dict", "tuple", "set",
                            "frozenset", "type", "object"})  # a file may not rebind a builtin's name (static_shadowing)


def _plain_type(node: ast.AST, aliases: dict[str, str]) -> bool:
    """None, a builtin type, a typing / collections.abc name or a module (each answers ``|`` with a union or a
    TypeError, keeping nothing), a subscript of one, or a ``|`` of those."""
    if isinstance(node, ast.Constant):
        return node.value is None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _plain_type(node.left, aliases) and _plain_type(node.right, aliases)
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name) and node.id not in aliases:
        return node.id in _BUILTIN_TYPES
    dotted = resolve(node, aliases) or ""
    return dotted.startswith(_TYPING_ROOTS) or "." not in dotted and bool(dotted) or is_module(dotted)


def _module_as_value(tree: ast.AST, aliases: dict[str, str], stored: bool) -> str | None:
    """A module named in ``tree`` where its value can reach running code, or None.

    A module may stand at the start of a dotted name (``torch.Tensor``). In a stored annotation (a class body's or
    the module's variable annotations: ``dataclasses.fields(C)[0].type`` hands them back) nowhere else. In a
    parameter or return annotation (never read back: ``__annotations__``, ``typing.get_type_hints`` and
    ``inspect.signature``'s annotations are refused) it may also be the whole annotation, a ``|`` operand or an
    element of a ``typing`` / ``collections.abc`` subscript, but never an element given to any other object
    (``SEEN[shutil]`` with ``SEEN`` a defaultdict makes the module a key when the annotation is evaluated)."""
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for sub in ast.walk(tree):
        if not isinstance(sub, ast.Name | ast.Attribute) or isinstance(parents.get(id(sub)), ast.Attribute):
            continue
        dotted = resolve(sub, aliases)
        if dotted is None or not ("." not in dotted or is_module(dotted)):
            continue  # a dotless import is always a module (``import shutil``)
        if stored:
            return dotted
        node: ast.AST = sub
        parent = parents.get(id(sub))
        while parent is not None and not isinstance(parent, ast.Expression):
            if isinstance(parent, ast.Subscript):
                if parent.value is node or not (resolve(parent.value, aliases) or "").startswith(_TYPING_ROOTS):
                    return dotted
            elif isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.BitOr):
                other = parent.right if parent.left is node else parent.left
                if not _plain_type(other, aliases):
                    return dotted  # ``X | module`` hands the module to X's ``__or__``
            elif not isinstance(parent, ast.Tuple | ast.List):
                return dotted
            node, parent = parent, parents.get(id(parent))
    return None


@dataclass(frozen=True)
class ModuleNames:
    """What a module-level name in an annotation may stand for: an import, a class of the file, or a module-level
    binding whose every value is itself a type expression (``Vec = torch.Tensor``, ``Num = int | float``)."""

    aliases: dict[str, str]
    classes: frozenset[str] = frozenset()
    constants: Mapping[str, list[ast.expr]] = field(default_factory=dict)
    bindings: Mapping[str, int] = field(default_factory=dict)  # name -> times the file binds it, in any scope

    def value_named(self, expr: ast.AST, depth: int = 0, *, lenient: bool = False) -> str | None:
        """A name in ``expr`` that may stand for something other than a type, or None (pure). An annotation's value
        is evaluated: a string found there is evaluated again as code by torch.library's schema inference and by
        ``typing.get_type_hints`` (``x: SPEC`` with ``SPEC = "..." + "..."``), and an attribute of the file's own
        objects (``x: CFG.spec``) or a name bound by a loop, a ``global`` write or ``TypeVar(...)`` can hold one.
        ``lenient``: a ``Literal[...]`` string, which torch's schema inference evaluates too: a name the file binds
        nowhere (``Literal["masked"]``, ``Literal["sum"]``) evaluates to nothing of the candidate's, so it passes."""
        parents = {id(child): node for node in ast.walk(expr) for child in ast.iter_child_nodes(node)}
        for sub in ast.walk(expr):
            if isinstance(sub, ast.Attribute) and not isinstance(parents.get(id(sub)), ast.Attribute):
                root: ast.AST = sub
                while isinstance(root, ast.Attribute):
                    root = root.value
                if not (isinstance(root, ast.Name) and root.id in self.aliases):
                    return ast.unparse(sub)  # an attribute of the file's own object, not of an imported module
            if not isinstance(sub, ast.Name) or sub.id in self.aliases or sub.id in self.classes:
                continue
            if (lenient or sub.id in _BUILTIN_TYPES) and not self.bindings.get(sub.id):
                continue  # bound nowhere in the file: a NameError or a builtin, never a string of the candidate's
            values = self.constants.get(sub.id)
            # an alias bound only by module-level assignments (a ``global`` write elsewhere could rebind it first)
            if not values or len(values) != self.bindings.get(sub.id) or depth > 3 or \
                    not all(self._type_value(v, depth + 1) for v in values):
                return sub.id
        return None

    def _type_value(self, value: ast.expr, depth: int) -> bool:
        """A module-level binding's value that is a type expression with no string in it, or a ``TypeVar("T",
        ...)`` / ``NewType("N", ...)`` whose other arguments are (pure)."""
        if isinstance(value, ast.Call) and resolve(value.func, self.aliases) in _TYPE_FACTORIES:
            first, rest = (value.args[0], value.args[1:]) if value.args else (None, [])
            return isinstance(first, ast.Constant) and isinstance(first.value, str) and \
                all(self._type_value(v, depth) for v in [*rest, *(k.value for k in value.keywords)])
        plain = all(isinstance(n, _ANNOTATION_NODES) and not (isinstance(n, ast.Constant) and
                                                              isinstance(n.value, str | bytes))
                    for n in ast.walk(value))  # fmt: skip
        return plain and self.value_named(value, depth) is None


def _names_refused(expr: ast.AST, at: ast.AST, kind: str, names: ModuleNames, report: Report, stored: bool, *,
                   lenient: bool = False) -> bool:
    """Report, at ``at``, a module ``expr`` hands over as a value or a name in it that may stand for something other
    than a type (``kind``: "annotation" or "string annotation"); True when one was reported."""
    module = _module_as_value(expr, names.aliases, stored)
    if module is not None:
        report("banned-import", at, f"{kind} hands module `{module}` over as a value (typing, torch.library and "
               f"dataclasses evaluate annotations, and may subscript or call any object); name a type in it such as "
               f"`{module}.Name`")
        return True
    value = names.value_named(expr, lenient=lenient)
    if value is not None:
        report("dangerous-builtin", at, f"{kind} names `{value}`, which may hold a value other than a type "
               "(torch.library and typing evaluate a string found there as code); use the type itself instead, such "
               "as `torch.Tensor`, or an alias bound once to a type expression")
        return True
    return False


def check_annotation(expr: ast.AST, names: ModuleNames, report: Report, *, stored: bool = True) -> None:
    """Annotations are code to typing, torch.library and dataclasses: only plain type expressions, where a module
    stands only where its value reaches no running code (:func:`_module_as_value`) and every name stands for a type
    (:meth:`ModuleNames.value_named`); ``stored``: a class body's or the module's variable annotation, which running
    code can read back."""
    aliases = names.aliases
    if _names_refused(expr, expr, "annotation", names, report, stored):
        return
    # Literal's strings are values to typing, but torch.library's schema inference evaluates every string under a
    # generic: they are judged as string annotations, where a name found nowhere (a NameError) may stand
    literal = {id(n) for sub in ast.walk(expr) if isinstance(sub, ast.Subscript)
               and resolve(sub.value, aliases) in _LITERALS for n in ast.walk(sub.slice)}
    # Literal[-1]: a negative number is a value Literal holds (PEP 586), not code
    negative = {id(n) for sub in ast.walk(expr) if id(sub) in literal and isinstance(sub, ast.UnaryOp)
                and isinstance(sub.op, ast.USub) and isinstance(sub.operand, ast.Constant)
                and type(sub.operand.value) in (int, float) for n in (sub, sub.op)}
    for sub in ast.walk(expr):
        if id(sub) in negative:
            continue
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            _check_string_annotation(sub, sub.value, names, report, stored, lenient=id(sub) in literal)
        elif not isinstance(sub, _ANNOTATION_NODES) or (isinstance(sub, ast.BinOp) and
                                                       not isinstance(sub.op, ast.BitOr)):  # fmt: skip
            report("dangerous-builtin", sub, "annotation holds code (typing, torch.library and dataclasses "
                        "evaluate annotations); use a plain type such as `torch.Tensor` or `tl.constexpr` instead")
            return


def _check_string_annotation(node: ast.Constant, text: str, names: ModuleNames, report: Report,
                             stored: bool, *, lenient: bool = False) -> None:
    aliases = names.aliases
    try:
        parsed = pyast.parse_expression(text.strip())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return  # not an expression: nothing will evaluate it as one (a docstring-like literal)
    if _names_refused(parsed, node, "string annotation", names, report, stored, lenient=lenient):
        return
    for sub in ast.walk(parsed):
        bad = not isinstance(sub, (*_ANNOTATION_NODES, ast.Expression)) or (
            isinstance(sub, ast.BinOp) and not isinstance(sub.op, ast.BitOr))
        if isinstance(sub, ast.Name) and (sub.id in DANGEROUS_BUILTINS or sub.id == "getattr" or _is_dunder(sub.id)):
            bad = True
        if isinstance(sub, ast.Attribute) and _is_dunder(sub.attr) and sub.attr not in ALLOWED_DUNDERS:
            bad = True
        if bad:
            report("dangerous-builtin", node, "string annotation holds code (typing and torch.library "
                        "evaluate it); use a plain type name such as \"torch.Tensor\" instead")
            return
        if isinstance(sub, ast.Attribute | ast.Name):
            dotted = resolve(sub, aliases)
            hit = classify_name(dotted) if dotted else None
            if hit is not None:
                report(hit[0], node, f"string annotation names `{dotted}`, which {hit[1]}; remove it")
                return
