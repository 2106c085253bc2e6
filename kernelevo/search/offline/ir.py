"""The offline generator's IR: values computed per lane, and the lowered program."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from typing import TypeAlias

    import torch


ARG_REDUCTIONS = ("argmax", "argmin")  # reductions whose result is an index (int64) along the row
# pointwise ops whose result is discrete (a rounded number, a sign, a truth value): one ulp in an operand can flip it
DECISIONS = frozenset({"round", "floor", "ceil", "trunc", "sign", "ne", "eq", "lt", "gt", "le", "ge"})


class Unsupported(Exception):
    """The graph holds an op or a layout the offline generator does not handle; ``node``: the graph call it
    failed on, where known (set by the lowering loop)."""

    node: Any = None


class ValueAttrs(TypedDict, total=False):
    """What a value's kind needs beyond its operands (each kind sets the keys it uses)."""

    op: str  # pw: the pointwise op; reduce/global: sum|mean|max|min|var|std|argmax|argmin; scan: sum;
    # window: mean|max
    kwargs: dict[str, Any]  # pw: the ATen op's keyword arguments (alpha, rounding_mode, approximate ...)
    keepdim: bool  # reduce
    dim: int  # reduce over a dimension other than the last, until analysis moves it last
    merged: int  # reduce over the last ``merged`` dimensions, until analysis merges them into one
    col_div: str  # input: column j of the (merged) row reads element j // col_div (host expression)
    correction: Any  # reduce: the graph's correction argument (an int or a float), kept as traced
    start: str  # shift: host expression of the slice's start; iota: its first value
    widths: list[str]  # cat: host expressions of the parts' widths
    expr: str  # hostfloat: the host expression
    root: str  # input views: the input the view was taken of (keeps generated names short)
    is_bool: bool  # input: a bool tensor, passed to the kernel as uint8
    step: str  # iota: host expression of the step (``start`` is its first value)
    wrap: bool  # gather/bag: negative indices count from the end (``weight[idx]``; embedding does not)
    table_dim: int  # gather: the dim the table's columns run along, where a view moved them off the last one
    stride: list[int]  # conv, window: (stride_h, stride_w)
    padding: list[int]  # conv, window: (pad_h, pad_w)
    kernel: list[int]  # window: the window's (height, width)
    dilation: list[int]  # window: the distance between taps, per dim (stride and padding as for conv)
    count_include_pad: bool  # window (average): divide by the taps inside the padded input, not the input
    divisor_override: int | None  # window (average): divide by this instead
    ceil_mode: bool  # window: the last window may run past the padded input (PyTorch's ceil_mode)
    exact: bool  # pw: the result reaches a decision (see mark_exact): divide and take roots with IEEE rounding


@dataclass
class Value:
    """One IR value. ``shape`` holds host expressions (Python source) per dimension."""

    name: str
    # input|const|pw|cast|reduce|global|pick|cat|shift|reshape|outview|chain|scan|matmul|conv|hostfloat|iota|gather|bag
    # |window
    kind: str
    args: tuple[Operand, ...] = ()
    rank: int = 0
    shape: tuple[str, ...] = ()
    dtype: torch.dtype | None = None  # None: a host float
    attrs: ValueAttrs = field(default_factory=ValueAttrs)

    def tensor_arg(self, index: int = 0) -> Value:
        """Operand ``index`` where the kind takes a tensor there (the source of a reduction, cast, view,
        pick or matmul): the lowering puts only values there, so anything else is a generator bug."""
        arg = self.args[index]
        if not isinstance(arg, Value):
            raise Unsupported(f"{self.name}: operand {index} of a {self.kind} value is {arg!r}, not a tensor")
        return arg


def size_product(dims: tuple[str, ...]) -> str:
    """The number of elements of ``dims`` (host expressions) as one host expression: ``(H) * (W)``."""
    return " * ".join(f"({d})" for d in dims)


def appends_ones(shape: tuple[str, ...], base: tuple[str, ...]) -> bool:
    """Whether ``shape`` is ``base`` with trailing ones added (``[N, C]`` as ``[N, C, 1, 1]``): the same value per
    row, a statistic broadcast back over the dims it reduced."""
    return len(shape) > len(base) and shape[:len(base)] == base and all(d == "1" for d in shape[len(base):])


def rows_free(v: Value) -> bool:
    """Whether ``v`` depends on the op's leading dims only through a matmul's accumulator: the kernel computes it
    per output row of the matmul, so a view that keeps its last dim (``[B * T, N]`` as ``[B, T, N]``, the 3-D
    ``nn.Linear``) numbers the same rows the same way. Its other operands are scalars or per-column vectors."""
    if v.kind == "matmul":
        return True
    if v.kind not in ("pw", "cast"):
        return False
    tensors = [a for a in v.args if isinstance(a, Value)]
    return any(rows_free(a) for a in tensors) and all(
        rows_free(a) or a.kind in ("const", "hostfloat") or (a.kind == "input" and a.rank <= 1) for a in tensors)


def _decides(v: Value) -> bool:
    """Whether ``v`` turns floats into a discrete result: a rounding, a comparison, a cast to an integer or bool
    dtype, an arg-reduction."""
    if v.kind == "pw":
        return v.attrs.get("op") in DECISIONS
    if v.kind == "cast":
        return v.dtype is not None and not v.dtype.is_floating_point
    if v.kind in ("reduce", "global"):
        return v.attrs.get("op") in ARG_REDUCTIONS
    return False


def mark_exact(prog: Program) -> None:
    """Set ``attrs["exact"]`` on every value whose result reaches a decision (int8 quantisation: ``x / scale``
    before ``round``). Those are computed as PyTorch computes them (IEEE division and square root), since a result
    one ulp off can round or compare the other way and integers compare exactly. Every other float value only meets
    the verifier's tolerance, so it divides with Triton's fast full-range division (2 ulp at most): correctly
    rounded division is a long instruction sequence, and a row-normalising op (cosine similarity) does two per
    element it loads."""
    exact: set[str] = set()
    pending = [a for v in prog.values.values() if _decides(v) for a in v.args if isinstance(a, Value)]
    while pending:  # walk back from every decision through everything it depends on
        v = pending.pop()
        if v.name not in exact:
            exact.add(v.name)
            pending.extend(a for a in v.args if isinstance(a, Value))
    for v in prog.values.values():
        if v.kind == "pw" and v.name in exact:
            v.attrs["exact"] = True
        else:
            v.attrs.pop("exact", None)


# An operand of a lane value: another value, or a Python scalar from the graph (bool is an int).
Operand: TypeAlias = "Value | int | float"


@dataclass
class Program:
    """The lowered op: host statements, lane values, outputs."""

    host_lines: list[str]
    values: dict[str, Value]
    outputs: list[Value]
    inputs: list[Value]  # kernel inputs (tensor views the forward passes to kernels)
    returns_tuple: bool
    output_perms: dict[int, list[int]] = field(default_factory=dict)  # out index -> permute on return
    # out index -> the shape (host expressions) the forward returns: a view of the contiguous output the kernel
    # writes (``h.view(b, t, -1)`` after a per-head norm; the merged dims of a reduction over several)
    output_views: dict[int, tuple[str, ...]] = field(default_factory=dict)
