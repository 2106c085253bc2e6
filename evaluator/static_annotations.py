"""Annotations are code: typing.get_type_hints, dataclasses and torch.library's schema inference evaluate
them (string annotations included, with the module's globals), so an annotation that calls something
runs it. Only plain type expressions are allowed: names, attributes, subscripts, ``|`` unions, literals.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from evaluator.static_model import resolve
from evaluator.static_rules import ALLOWED_DUNDERS, DANGEROUS_BUILTINS, classify_name
from kernelevo import pyast

Report = Callable[[str, ast.AST, str], None]
_ANNOTATION_NODES = (ast.Name, ast.Attribute, ast.Subscript, ast.Tuple, ast.List, ast.Constant, ast.Load,
                     ast.BinOp, ast.BitOr)  # fmt: skip


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def check_annotation(expr: ast.AST, aliases: dict[str, str], report: Report) -> None:
    """Annotations are code to typing, torch.library and dataclasses: only plain type expressions."""
    for sub in ast.walk(expr):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            _check_string_annotation(sub, sub.value, aliases, report)
        elif not isinstance(sub, _ANNOTATION_NODES) or (isinstance(sub, ast.BinOp) and
                                                       not isinstance(sub.op, ast.BitOr)):  # fmt: skip
            report("dangerous-builtin", sub, "annotation holds code (typing, torch.library and dataclasses "
                        "evaluate annotations); use a plain type such as `torch.Tensor` or `tl.constexpr` instead")
            return


def _check_string_annotation(node: ast.Constant, text: str, aliases: dict[str, str], report: Report) -> None:
    try:
        parsed = pyast.parse_expression(text.strip())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return  # not an expression: nothing will evaluate it as one (a docstring-like literal)
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
