"""Constant folding for the static checker: the exact value of an expression built from constants.

CUDA sources and launch grids are only as checkable as their value is known: ``"cudaMal" + "loc"``,
``"collaMaduc"[::-1]`` or ``"{}{}".format(A, B)`` spell a banned identifier that no single piece
holds, and ``(n * 0,)`` is an empty grid although no literal zero stands alone. :func:`fold` evaluates
the pure subset of Python such expressions use (literals, module-level constants, arithmetic, slicing,
``%``/``format``/f-strings, ``join`` and a few string methods, ``min``/``max``/``len``/``int``/``str``,
``triton.cdiv``), never anything that could run candidate code, and gives up (None) on the rest.
An expression with several possible values (a name assigned in both branches of an ``if``) folds to
each of them. Sizes are bounded, so no input makes the checker build a huge string.
"""

from __future__ import annotations

import ast
import itertools
import operator
import re
from collections.abc import Callable
from typing import TypeVar

MAX_LEN = 1 << 20  # longest string folded (a CUDA source is far shorter)
MAX_ALTERNATIVES = 16
_MAX_INT = 1 << 64
_WIDE_FORMAT = re.compile(r"\d{5,}")  # "%99999999d" or "{:99999999}" would build a huge string

Lookup = Callable[[str], "list[ast.expr] | None"]  # name -> the expressions assigned to it
Resolve = Callable[[ast.AST], "str | None"]  # expression -> dotted name (triton.cdiv)
_T = TypeVar("_T")

_BINOPS: dict[type, Callable] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod, ast.Pow: operator.pow, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
    ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
}  # fmt: skip
_UNARYOPS: dict[type, Callable[..., object]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert,
}  # fmt: skip
_STR_METHODS = frozenset({"upper", "lower", "strip", "lstrip", "rstrip", "swapcase", "title", "capitalize",
                          "replace", "removeprefix", "removesuffix", "casefold", "zfill"})  # fmt: skip
_CALLS: dict[str, Callable] = {
    "min": min, "max": max, "abs": abs, "len": len, "int": int, "str": str, "bool": bool,
    "triton.cdiv": lambda a, b: -(-a // b),
    "triton.next_power_of_2": lambda n: 1 if n <= 1 else 1 << (int(n) - 1).bit_length(),
}  # fmt: skip


class _GiveUp(Exception):
    """The expression's value is not known statically (or would be too large)."""


def _bounded(value: _T) -> _T:
    if isinstance(value, str) and len(value) > MAX_LEN:
        raise _GiveUp
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _MAX_INT:
        raise _GiveUp
    if isinstance(value, list | tuple) and (len(value) > 4096 or sum(len(v) for v in value if isinstance(v, str))
                                             > MAX_LEN):  # fmt: skip
        raise _GiveUp
    return value


def _slice_bound(value: object) -> int | None:
    """A bound of a constant slice: None or an int."""
    if value is not None and not isinstance(value, int):
        raise _GiveUp
    return value


def _safe_binop(op: ast.operator, left: object, right: object) -> object:
    if isinstance(op, ast.Mult):
        seq, times = (left, right) if isinstance(left, str | list | tuple) else (right, left)
        if isinstance(seq, str | list | tuple) and (not isinstance(times, int) or len(seq) * max(times, 0) > MAX_LEN):
            raise _GiveUp
    if isinstance(op, ast.Pow) and (not isinstance(right, int) or right > 256 or right < 0):
        raise _GiveUp
    if isinstance(op, ast.LShift) and (not isinstance(right, int) or right > 64):
        raise _GiveUp
    if isinstance(op, ast.Mod) and isinstance(left, str) and _WIDE_FORMAT.search(left):
        raise _GiveUp
    fn = _BINOPS.get(type(op))
    if fn is None:
        raise _GiveUp
    try:
        return fn(left, right)
    except Exception as exc:  # noqa: BLE001 - a TypeError/ZeroDivisionError at run time: not a constant
        raise _GiveUp from exc


class _Folder:
    def __init__(self, lookup: Lookup, resolve: Resolve) -> None:
        self.lookup, self.resolve = lookup, resolve
        self.seen: set[str] = set()

    def values(self, node: ast.AST) -> list[object]:
        out = dict(_key(v) for v in self._values(node))
        if len(out) > MAX_ALTERNATIVES:
            raise _GiveUp
        return list(out.values())

    def one(self, node: ast.AST) -> object:
        values = self.values(node)
        if len(values) != 1:
            raise _GiveUp
        return values[0]

    def _values(self, node: ast.AST) -> list[object]:  # noqa: C901 - one case per expression kind
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str | int | float | bool) or node.value is None:
                return [node.value]
            raise _GiveUp
        if isinstance(node, ast.Name):
            exprs = self.lookup(node.id)
            if not exprs or node.id in self.seen:
                raise _GiveUp
            self.seen.add(node.id)
            try:
                return [v for e in exprs for v in self.values(e)]
            finally:
                self.seen.discard(node.id)
        if isinstance(node, ast.Tuple | ast.List):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                raise _GiveUp
            combos = itertools.product(*(self.values(e) for e in node.elts))
            make = tuple if isinstance(node, ast.Tuple) else list
            return [_bounded(make(c)) for c in itertools.islice(combos, MAX_ALTERNATIVES + 1)]
        if isinstance(node, ast.BinOp):
            rights = self.values(node.right)
            return [_bounded(_safe_binop(node.op, a, b)) for a in self.values(node.left) for b in rights]
        if isinstance(node, ast.UnaryOp):
            try:
                return [_UNARYOPS[type(node.op)](v) for v in self.values(node.operand)]
            except Exception as exc:  # noqa: BLE001
                raise _GiveUp from exc
        if isinstance(node, ast.IfExp):
            try:
                tests = self.values(node.test)
            except _GiveUp:
                tests = [True, False]  # a test known only at run time: either branch
            if len(tests) == 1:
                return self.values(node.body if tests[0] else node.orelse)
            return self.values(node.body) + self.values(node.orelse)
        if isinstance(node, ast.JoinedStr):
            pieces = [self._strings(v) for v in node.values]
            return [_bounded("".join(c)) for c in itertools.islice(itertools.product(*pieces), MAX_ALTERNATIVES + 1)]
        if isinstance(node, ast.FormattedValue):
            return [self._formatted(node, v) for v in self.values(node.value)]
        if isinstance(node, ast.Subscript):
            return [self._subscript(v, node.slice) for v in self.values(node.value)]
        if isinstance(node, ast.Call):
            return self._call(node)
        raise _GiveUp

    def _strings(self, node: ast.AST) -> list[str]:
        """The values of one piece of an f-string (a constant or a formatted value: always strings)."""
        values = self.values(node)
        strings = [v for v in values if isinstance(v, str)]
        if len(strings) != len(values):
            raise _GiveUp
        return strings

    def _formatted(self, node: ast.FormattedValue, value: object) -> str:
        spec = "" if node.format_spec is None else self.one(node.format_spec)
        if not isinstance(spec, str) or _WIDE_FORMAT.search(spec):
            raise _GiveUp
        if node.conversion == ord("r"):
            value = repr(value)
        elif node.conversion in (ord("s"), ord("a")):
            value = str(value) if node.conversion == ord("s") else ascii(value)
        try:
            return _bounded(format(value, spec))
        except Exception as exc:  # noqa: BLE001
            raise _GiveUp from exc

    def _subscript(self, value: object, index: ast.AST) -> object:
        if not isinstance(value, str | tuple | list):
            raise _GiveUp
        if isinstance(index, ast.Slice):
            bounds = [None if p is None else self.one(p) for p in (index.lower, index.upper, index.step)]
            lower, upper, step = (_slice_bound(b) for b in bounds)
            if step == 0:
                raise _GiveUp
            return value[lower:upper:step]
        key = self.one(index)
        if not isinstance(key, int):
            raise _GiveUp  # only an int indexes a str, tuple or list
        try:
            return value[key]
        except Exception as exc:  # noqa: BLE001
            raise _GiveUp from exc

    def _call(self, node: ast.Call) -> list[object]:
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise _GiveUp
        func = node.func
        if isinstance(func, ast.Attribute) and not (isinstance(func.value, ast.Name) and self.resolve(func)):
            owners = self.values(func.value)
            args = [self.one(a) for a in node.args]
            kwargs = {k.arg: self.one(k.value) for k in node.keywords}
            return [self._method(owner, func.attr, args, kwargs) for owner in owners]
        name = func.id if isinstance(func, ast.Name) and func.id in ("min", "max", "abs", "len", "int", "str",
                                                                     "bool") else self.resolve(func)  # fmt: skip
        fn = _CALLS.get(name or "")
        if fn is None or node.keywords:
            raise _GiveUp
        args = [self.one(a) for a in node.args]
        try:
            return [_bounded(fn(*args))]
        except Exception as exc:  # noqa: BLE001
            raise _GiveUp from exc

    def _method(self, owner: object, method: str, args: list, kwargs: dict) -> object:
        if not isinstance(owner, str):
            raise _GiveUp
        if method == "join" and len(args) == 1 and not kwargs and isinstance(args[0], list | tuple):
            if not all(isinstance(a, str) for a in args[0]):
                raise _GiveUp
            return _bounded(owner.join(args[0]))
        if method == "format":
            if _WIDE_FORMAT.search(owner) or not all(isinstance(a, str | int | float | bool) for a in
                                                     [*args, *kwargs.values()]):  # fmt: skip
                raise _GiveUp
            try:
                return _bounded(owner.format(*args, **kwargs))
            except Exception as exc:  # noqa: BLE001
                raise _GiveUp from exc
        if method in _STR_METHODS and not kwargs and all(isinstance(a, str | int) for a in args):
            if method == "zfill" and (not args or not isinstance(args[0], int) or args[0] > MAX_LEN):
                raise _GiveUp
            try:
                return _bounded(getattr(owner, method)(*args))
            except Exception as exc:  # noqa: BLE001
                raise _GiveUp from exc
        raise _GiveUp


def _key(value: object) -> tuple[str, object]:
    return (f"{type(value).__name__}:{value!r}", value)


def fold(node: ast.AST, lookup: Lookup, resolve: Resolve = lambda _n: None) -> list[object] | None:
    """Every value ``node`` can have, when all are known statically (at most 16); None otherwise."""
    try:
        return _Folder(lookup, resolve).values(node)
    except (_GiveUp, RecursionError):
        return None


def fold_strings(node: ast.AST, lookup: Lookup, resolve: Resolve = lambda _n: None) -> list[str] | None:
    """The possible string values of ``node`` (a list or tuple of strings is joined by newlines)."""
    values = fold(node, lookup, resolve)
    if values is None:
        return None
    out = []
    for value in values:
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            out.append("\n".join(value))
        elif isinstance(value, str):
            out.append(value)
        else:
            return None
    return out
