"""Rules a candidate's outputs must keep in its own process, and the rejection that breaking one raises.

Checked where the outputs are made, before anything reaches the reference: no output aliases an input or
an earlier output; inputs keep their bits (``same_bits``, also used by the reference to compare repeated
runs on identical inputs).
"""

from __future__ import annotations

import collections
import types
from typing import Any

import torch


class Rejection(Exception):
    """The candidate broke a rule at run time; ``reason`` is a verdict reason."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


_TYPE_NAME = type.__dict__["__name__"].__get__  # a class's own name, never a metaclass property it defines
_TENSOR = torch.Tensor  # bound at import, before any candidate runs


def output_list(raw: Any, where: str) -> list[Any]:
    """``forward``'s return value as a list: a plain tensor, tuple or list, or a named tuple exactly as
    ``collections.namedtuple``/``typing.NamedTuple`` make it (read with tuple's own slots). Anything else (a list
    subclass, an object with its own ``__iter__``) would run the candidate's code after the guards are off, while the
    harness reads the outputs, so it is refused without iterating it."""
    kind = type(raw)
    if kind is tuple or kind is list:
        return list(raw)  # the builtin iteration of an exact tuple or list: no candidate code runs
    if kind is _TENSOR:
        return [raw]
    if plain_namedtuple(kind):
        return [_TUPLE_ITEM(raw, i) for i in range(_TUPLE_LEN(raw))]
    raise Rejection("cheat_suspected", f"{where}: forward returned a {_TYPE_NAME(kind)}; return a torch.Tensor or a "
                                       "tuple/list of them, or a plain named tuple (containers of other types, named "
                                       "tuples with methods of their own and tensor subclasses are refused)")


_TUPLE_ITEM, _TUPLE_LEN = tuple.__getitem__, tuple.__len__  # tuple's own slots, bound before any candidate runs
_MRO = type.__dict__["__mro__"].__get__
_CLASS_DICT = type.__dict__["__dict__"].__get__
_NAMEDTUPLE_FILE = collections.__file__
_TUPLEGETTER = type(vars(collections.namedtuple("_Probe", "a"))["a"])
# What collections.namedtuple puts in the class it makes (typing.NamedTuple adds the last two)
_NAMEDTUPLE_MEMBERS = frozenset({"__doc__", "__getnewargs__", "__match_args__", "__module__", "__new__", "__repr__",
                                 "__slots__", "_asdict", "_field_defaults", "_fields", "_make", "_replace",
                                 "__annotations__", "__orig_bases__"})


def plain_namedtuple(kind: type) -> bool:
    """``kind`` is a named tuple class as the standard library makes it: derived from tuple alone, holding only what
    ``collections.namedtuple`` generates (its functions defined in ``collections``, ``__new__`` built by it) and one
    item getter per field. Nothing of the candidate's runs when a program iterates, indexes, compares or prints it."""
    if type(kind) is not type or _MRO(kind) != (kind, tuple, object):  # no metaclass of the candidate's
        return False
    namespace = _CLASS_DICT(kind)
    fields = namespace.get("_fields")
    if type(fields) is not tuple or any(type(f) is not str for f in fields):
        return False
    for name, value in namespace.items():  # exact type tests only: isinstance could read a __class__ property
        if name in fields:
            if type(value) is not _TUPLEGETTER:
                return False
            continue
        if name not in _NAMEDTUPLE_MEMBERS:
            return False
        kind_of = type(value)
        if kind_of in (str, tuple, dict, type(None)):
            continue
        function = value.__func__ if kind_of in (classmethod, staticmethod) else value
        if type(function) is not types.FunctionType:
            return False
        filename = function.__code__.co_filename
        if filename != _NAMEDTUPLE_FILE and not (name == "__new__" and filename == "<string>"):
            return False
    return True


def same_bits(x: torch.Tensor, y: torch.Tensor) -> bool:
    """Same shape, dtype and bytes (NaN payloads included)."""
    if x.shape != y.shape or x.dtype != y.dtype:
        return False
    return torch.equal(x.reshape(-1).view(torch.uint8) if x.numel() else x,
                       y.reshape(-1).view(torch.uint8) if y.numel() else y)


def require_no_alias(outs: list[torch.Tensor], inputs: list[Any], kept: list[torch.Tensor], where: str) -> None:
    """No output shares memory with an input or reuses an earlier output's memory (a cache that hands back
    the same buffer, or an answer written into the caller's tensors)."""
    def span(t: torch.Tensor) -> tuple[int, int]:
        start = t.untyped_storage().data_ptr()
        return start, start + t.untyped_storage().nbytes()

    input_spans = [span(x) for x in inputs if isinstance(x, torch.Tensor) and x.numel()]
    kept_ptrs = {t.untyped_storage().data_ptr() for t in kept if t.numel()}
    seen: set[int] = set()
    for k, out in enumerate(outs):
        if not out.numel():
            continue
        lo, hi = span(out)
        if any(lo < b and a < hi for a, b in input_spans):
            raise Rejection("cheat_suspected", f"{where}: output {k} shares memory with an input")
        if lo in kept_ptrs or lo in seen:
            raise Rejection("cheat_suspected", f"{where}: output {k} reuses the memory of an earlier output")
        seen.add(lo)
