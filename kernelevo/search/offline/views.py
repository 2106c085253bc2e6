"""Views of a kernel's inputs (split, narrow, unsqueeze, permute ...) replayed on the host.

A view of an input costs nothing: the candidate's ``forward`` applies the same view with PyTorch and
passes the result (with its strides) to the kernel as one more input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kernelevo.search.offline.ir import Unsupported, Value

if TYPE_CHECKING:
    from kernelevo.search.offline.lower import Lowering


def host_view(lowering: Lowering, node: Any, name: str, src: Value, args: list[Any]) -> Value | list[Value]:
    """A view of a kernel input, done by the forward itself: the result is a new kernel input."""

    def sizes(xs: Sequence[Any]) -> str:
        return "[" + ", ".join(lowering.sym(x) for x in xs) + "]"

    s = src.name
    root = src.attrs.get("root", s)  # names stay short: x_view_3, not x_unsqueeze_1_unsqueeze_2
    if name == "expand" and _reshaped(node) and lowering.shape_of(node) != src.shape:
        # regrouped after it (grouped-query attention's k[:, :, None].expand(...).reshape(b, h, s, d)): the view
        # must have the expanded sizes (stride 0), which the reshape then copies as PyTorch's does
        expr = f"{s}.expand({sizes(args[1])})"
    elif name in ("alias", "detach", "clone", "lift_fresh_copy", "contiguous", "expand"):
        return src  # an expand elsewhere is the broadcast the kernel does anyway
    elif name in ("split_with_sizes", "split"):
        split = sizes(args[1]) if isinstance(args[1], (list, tuple)) else lowering.sym(args[1])
        dim = args[2] if len(args) > 2 else 0
        pieces = []
        for i, fake in enumerate(node.meta["val"]):
            pname = lowering._fresh(f"{root}_part{i}")
            piece = lowering._input(pname, f"{s}.split({split}, {dim})[{i}]", node, fake)
            piece.attrs["root"] = root
            pieces.append(piece)
        return pieces
    elif name == "unsqueeze":
        expr = f"{s}.unsqueeze({args[1]})"
    elif name == "squeeze":
        dims = args[1] if len(args) > 1 else None
        dims = [dims] if isinstance(dims, int) else dims
        expr = s if dims is None else s + "".join(f".squeeze({d})" for d in sorted(dims, reverse=True))
        if dims is None:
            expr = f"{s}.squeeze()"
    elif name in ("view", "_unsafe_view", "reshape"):
        expr = f"{s}.reshape({sizes(args[1])})"
    elif name == "broadcast_in_dim":
        shape, bdims = args[1], list(args[2])
        new_shape = [lowering.sym(shape[i]) if i not in bdims else f"{s}.shape[{bdims.index(i)}]"
                     for i in range(len(shape))]
        new_shape = [v if i in bdims else "1" for i, v in enumerate(new_shape)]
        expr = f"{s}.reshape([{', '.join(new_shape)}])"
    elif name == "slice":
        dim = args[1] if len(args) > 1 else 0
        start = args[2] if len(args) > 2 else 0
        end = args[3] if len(args) > 3 else None
        step = args[4] if len(args) > 4 else 1
        whole = end is None or (isinstance(end, int) and end >= 2**62)
        if step != 1:  # x[..., 0::2]: a strided view, passed to the kernel with its strides
            if not isinstance(step, int) or step < 1:
                raise Unsupported(f"a slice with step {step!r}")
            index = [":"] * (dim % src.rank) + [f"{lowering.sym(start)}:{'' if whole else lowering.sym(end)}:{step}"]
            expr = f"{s}[{', '.join(index)}]"
            view = lowering._input(lowering._fresh(f"{root}_view"), expr, node)
            view.attrs["root"] = root
            return view
        if start == 0 and whole:
            return src
        end_s = f"{s}.shape[{dim}]" if end is None or (isinstance(end, int) and end >= 2**62) else \
            f"min({lowering.sym(end)}, {s}.shape[{dim}])"
        expr = f"{s}.narrow({dim}, {lowering.sym(start)}, {end_s} - {lowering.sym(start)})"
    elif name == "permute":
        expr = f"{s}.permute({', '.join(str(d) for d in args[1])})"
    elif name == "t":
        expr = f"{s}.t()"
    elif name == "transpose":
        expr = f"{s}.transpose({args[1]}, {args[2]})"
    elif name == "select":
        expr = f"{s}.select({args[1]}, {lowering.sym(args[2])})"
    else:
        raise Unsupported(f"view op {name}")
    view = lowering._input(lowering._fresh(f"{root}_view"), expr, node)
    view.attrs["root"] = root
    return view


def _reshaped(node: Any) -> bool:
    """Whether a view's result is reshaped (through clones and other no-op views) before anything else reads it."""
    return any(user.op == "call_function" and _name(user.target) in ("view", "_unsafe_view", "reshape")
               or (_name(user.target) in ("clone", "alias", "contiguous", "detach") and _reshaped(user))
               for user in node.users)


def _name(target: Any) -> str:
    overload = getattr(target, "_overloadpacket", None)
    return (overload.__name__ if overload is not None else getattr(target, "__name__", str(target))).split(".")[0]
