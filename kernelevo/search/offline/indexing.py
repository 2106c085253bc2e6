"""Lowering of index-built values: ``arange`` (iota) and its views, and gathers of table rows.

An iota is never a tensor in memory: a kernel computes it from the position it works on (the row's index
in a leading dimension, or the column), so masks built in the op from ``arange`` comparisons (a causal
``arange(s)[:, None] >= arange(s)[None, :]``, ``ones(s, s).tril()``) cost no memory traffic.

A gather ``weight[idx]`` / ``embedding(weight, idx)`` of a 2-D table is a value whose rows are table rows
picked by an index tensor; a sum, mean, max or min of it over the index tensor's last dimension (an
embedding bag: ``weight[idx].sum(1)``) is a ``bag``, which the kernel computes with a loop over the bag.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernelevo.search.offline.ir import Unsupported, Value

if TYPE_CHECKING:
    from kernelevo.search.offline.lower import Lowering

INDEX_OPS = {"arange", "index", "embedding"}
_IOTA_VIEWS = {"unsqueeze", "squeeze", "view", "_unsafe_view", "reshape", "alias", "detach", "clone",
               "lift_fresh_copy", "contiguous", "slice", "broadcast_in_dim"}
BAG_OPS = ("sum", "mean", "max", "min")


def lower_arange(lowering: Lowering, node: Any, args: list[Any]) -> Value:
    """``arange(end)``, ``arange(start, end)``, ``arange(start, end, step)``: an iota (no memory)."""
    numbers = [a for a in args if not isinstance(a, Value)]
    if len(numbers) != len(args):
        raise Unsupported("arange with a tensor bound")
    start, step = (0, 1) if len(args) < 2 else (args[0], args[2] if len(args) > 2 else 1)
    val = node.meta["val"]
    return _iota(lowering, node, lowering.shape_of(node), val.dtype, lowering.sym(start), lowering.sym(step))


def _iota(lowering: Lowering, node: Any, shape: tuple[str, ...], dtype: Any, start: str, step: str) -> Value:
    varying = [s for s in shape if s != "1"]
    if len(varying) > 1:
        raise Unsupported("an arange viewed with more than one dimension of its length")
    v = Value(node.name, "iota", (), len(shape), shape, dtype, {"start": start, "step": step})
    lowering.values[v.name] = v
    return v


def iota_view(lowering: Lowering, node: Any, name: str, src: Value, args: list[Any]) -> Value | None:
    """A view of an iota as another iota (None: the view is not one that keeps it an iota)."""
    if name not in _IOTA_VIEWS:
        return None
    shape = lowering.shape_of(node)
    if len([s for s in shape if s != "1"]) > 1:
        return None
    start, step = src.attrs["start"], src.attrs["step"]
    if name == "slice":
        dim = args[1] % src.rank if len(args) > 1 else 0
        first = args[2] if len(args) > 2 else 0
        stride = args[4] if len(args) > 4 else 1
        if src.shape[dim] != "1":  # slicing along the iota's own dimension moves its start and step
            if first not in (0, None):
                start = f"({start}) + ({lowering.sym(first)}) * ({step})"
            if stride != 1:
                step = f"({step}) * ({lowering.sym(stride)})"
    return _iota(lowering, node, shape, node.meta["val"].dtype, start, step)


def lower_gather(lowering: Lowering, node: Any, name: str, args: list[Any]) -> Value:
    """``weight[idx]`` (aten.index with one index tensor on dim 0) or ``embedding(weight, idx)``."""
    import torch

    if name == "index":
        weight, indices = args[0], args[1]
        if len(indices) != 1 or not isinstance(indices[0], Value):
            raise Unsupported("aten.index with more than one index tensor (only table[idx] is supported)")
        idx = indices[0]
    else:
        weight, idx = args[0], args[1]
    if not isinstance(weight, Value) or weight.kind != "input" or weight.rank != 2:
        raise Unsupported(f"aten.{name} of something other than a 2-D input table")
    if not isinstance(idx, Value) or idx.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
        raise Unsupported(f"aten.{name} with an index that is not an integer tensor (boolean masks are not supported)")
    if idx.rank < 1:
        raise Unsupported(f"aten.{name} with a 0-d index")
    return lowering._new(node, "gather", (weight, idx), wrap=name == "index")


def bag(lowering: Lowering, node: Any, gather: Value, kind: str, dims: list[int], keepdim: bool) -> Value | None:
    """A reduction of a gather over its index tensor's last dimension (an embedding bag), else None."""
    idx = gather.tensor_arg(1)
    if dims != [idx.rank - 1] or kind not in BAG_OPS:
        return None
    if idx.kind != "input":
        raise Unsupported("an embedding bag over computed indices (only an input index tensor is supported)")
    return lowering._new(node, "bag", gather.args, op=kind, keepdim=keepdim, wrap=gather.attrs.get("wrap", False))


def live_values(values: dict[str, Value], outputs: list[Value]) -> dict[str, Value]:
    """The values the outputs depend on (inputs always stay), in their original order: a gather that only
    feeds a bag is not a value of the kernels' domain."""
    seen: set[str] = set()
    stack = list(outputs)
    while stack:
        v = stack.pop()
        if v.name in seen:
            continue
        seen.add(v.name)
        stack.extend(a for a in v.args if isinstance(a, Value))
    return {k: v for k, v in values.items() if k in seen or v.name in seen or v.kind == "input"}
