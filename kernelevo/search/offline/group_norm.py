"""Group norm (``nn.GroupNorm``, ``F.group_norm``) as rows of one group each.

``aten.native_group_norm(x, weight, bias, N, C, HxW, G, eps)`` normalises each of the ``N * G`` groups of
``C / G`` channels over the channels and every position. The forward views ``x`` as ``[N, G, C / G, HxW]`` and
the weight and bias as ``[1, G, C / G, 1]``; the statistics are reductions over the last two dims, which analysis
merges into one row of ``C / G * HxW`` columns (``moves.merge_reduced_dims``), where column ``j`` belongs to
channel ``j // HxW`` of the group: the per-channel operands are read at that coarser column. The result is
returned as a view in ``x``'s own shape (pointwise ops after it, a SiLU, are computed in the grouped layout).
Only the normalised output is lowered; the saved mean and rstd (outputs 1 and 2) are not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernelevo.search.offline.ir import Operand, Unsupported, Value, ValueAttrs

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from kernelevo.search.offline.lower import Lowering

GROUP_NORM_OPS = {"native_group_norm"}


def _grouped_view(lowering: Lowering, src: Value, shape: tuple[str, ...], what: str) -> Value:
    """``src.reshape(shape)`` done by the forward: a new kernel input."""
    if src.kind != "input":
        raise Unsupported(f"group norm of a computed {what} (only inputs of the op and parameters are lowered)")
    root = src.attrs.get("root", src.name)
    name = lowering._fresh(f"{root}_grouped")
    lowering.host_lines.append(f"{name} = {src.name}.reshape({', '.join(shape)})")
    v = Value(name, "input", (), len(shape), shape, src.dtype, {"is_bool": False, "root": root})
    lowering.values[name] = v
    lowering.inputs.append(v)
    return v


def lower_group_norm(lowering: Lowering, node: Any, args: list[Any]) -> list[Any]:
    """The three outputs of ``aten.native_group_norm``: the normalised tensor (a view of the grouped result) and
    two placeholders for the saved statistics, which no lowered op reads."""
    import torch

    x, weight, bias, n, c, hw, groups, eps = args[:8]
    if not isinstance(x, Value) or x.rank < 2:
        raise Unsupported("group norm of something other than a tensor of rank 2 or more")
    if not isinstance(groups, int) or groups < 1:
        raise Unsupported("group norm with a number of groups that is not a constant")
    per_group = f"({lowering.sym(c)}) // {groups}"
    shape = (lowering.sym(n), str(groups), per_group, lowering.sym(hw))
    xg = _grouped_view(lowering, x, shape, "input")
    keep = shape[:2] + ("1", "1")
    f32 = torch.float32

    def make(kind: str, operands: tuple[Operand, ...], like: tuple[str, ...], **attrs: Unpack[ValueAttrs]) -> Value:
        v = Value(lowering._fresh(f"{node.name}_{kind}"), kind, operands, len(like), like, f32, attrs)
        lowering.values[v.name] = v
        return v

    _mean, centred, var = lowering.moments(node, xg, 2, 0, keep)
    rstd = make("pw", (make("pw", (var, eps), keep, op="add", kwargs={}),), keep, op="rsqrt", kwargs={})
    out = make("pw", (centred, rstd), shape, op="mul", kwargs={})
    channel = ("1", str(groups), per_group, "1")
    if weight is not None:
        out = make("pw", (out, _grouped_view(lowering, weight, channel, "weight")), shape, op="mul", kwargs={})
    if bias is not None:
        out = make("pw", (out, _grouped_view(lowering, bias, channel, "bias")), shape, op="add", kwargs={})
    out.dtype = x.dtype
    fake = node.meta["val"][0]
    view = Value(f"{node.name}_out", "outview", (out,), fake.dim(), tuple(lowering.sym(d) for d in fake.shape),
                 fake.dtype)
    lowering.values[view.name] = view
    return [view, None, None]
