"""The offline generator's IR: values computed per lane, and the lowered program."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class Unsupported(Exception):
    """The graph holds an op or a layout the offline generator does not handle."""


@dataclass
class Value:
    """One IR value. ``shape`` holds host expressions (Python source) per dimension."""

    name: str
    kind: str  # input|const|pw|cast|reduce|global|pick|cat|shift|reshape|matmul|hostfloat
    args: tuple = ()
    rank: int = 0
    shape: tuple[str, ...] = ()
    dtype: Any = None
    attrs: dict = field(default_factory=dict)


@dataclass
class Program:
    """The lowered op: host statements, lane values, outputs."""

    host_lines: list[str]
    values: dict[str, Value]
    outputs: list[Value]
    inputs: list[Value]  # kernel inputs (tensor views the forward passes to kernels)
    returns_tuple: bool
    output_perms: dict[int, list[int]] = field(default_factory=dict)  # out index -> permute on return
