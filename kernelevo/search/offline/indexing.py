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


def gather_view(lowering: Lowering, node: Any, name: str, src: Value, args: list[Any]) -> Value | None:
    """A view of a gather ``table[idx]`` as a gather by a view of ``idx`` the forward takes (None: not such a view).

    Swin's relative-position bias ``table[index].view(n, n, heads).permute(2, 0, 1)``: the element at ``(h, i, j)``
    is ``table[index[i, j], h]``. The index is kept viewed to the gather's full shape with a one where the table's
    columns run (``table_dim``, the last dim for a plain gather); a reshape that keeps the table's columns last, a
    permute and an unsqueeze are the same views of that index. The kernel reads the table's column from the row's
    position in ``table_dim`` (``emit_index.gather``)."""
    weight, idx = src.tensor_arg(0), src.tensor_arg(1)
    t = src.attrs.get("table_dim", src.rank - 1)
    if idx.kind != "input":
        return None
    full = idx.name if "table_dim" in src.attrs else f"{idx.name}.unsqueeze(-1)"
    shape = lowering.shape_of(node)
    if name in ("view", "_unsafe_view", "reshape") and t == src.rank - 1 and shape[-1:] == src.shape[-1:]:
        expr, t = f"{idx.name}.reshape([{', '.join(shape[:-1])}, 1])", len(shape) - 1
    elif name == "permute":
        order = [d % src.rank for d in args[1]]
        expr, t = f"{full}.permute({', '.join(map(str, order))})", order.index(t)
    elif name == "unsqueeze":
        d = args[1] % (src.rank + 1)
        expr, t = f"{full}.unsqueeze({d})", t + (d <= t)
    else:
        return None
    if t == len(shape) - 1:  # the columns are last again: a plain gather, by an index without the trailing one
        expr += ".squeeze(-1)"
    view = lowering._input(lowering._fresh(f"{idx.attrs.get('root', idx.name)}_view"), expr, node,
                           _fake_index(node, t, idx))
    view.attrs["root"] = idx.attrs.get("root", idx.name)
    attrs: dict[str, Any] = {"wrap": src.attrs.get("wrap", False)}
    if t != len(shape) - 1:
        attrs["table_dim"] = t
    return lowering._new(node, "gather", (weight, view), **attrs)


def _fake_index(node: Any, t: int, idx: Value) -> Any:
    """A fake tensor of the viewed index's shape and dtype: the gather's shape with a one at ``table_dim`` (dropped
    where that is the last dim)."""
    import torch

    val = node.meta["val"]
    if t == val.dim() - 1:
        return torch.empty(val.shape[:-1], dtype=idx.dtype, device="meta")
    return torch.empty(val.shape[:t] + (1,) + val.shape[t + 1:], dtype=idx.dtype, device="meta")


def bag(lowering: Lowering, node: Any, gather: Value, kind: str, dims: list[int], keepdim: bool) -> Value | None:
    """A reduction of a gather over its index tensor's last dimension (an embedding bag), else None."""
    idx = gather.tensor_arg(1)
    if dims != [idx.rank - 1] or kind not in BAG_OPS or "table_dim" in gather.attrs:
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
