"""Reductions over a dimension other than the last: move that dimension last for the whole op; reductions over
several trailing dimensions: merge them into one.

``x.sum(dim=1)`` on ``[B, D, L]`` becomes a last-dim reduction of the view ``x.permute(0, 2, 1)``, and
``x.mean(dim=(2, 3))`` on ``[N, C, H, W]`` one of the view ``x.reshape(N, C, H * W)``.
Every full-rank input is viewed the same way (views are free: the forward does them), full-rank
outputs are written in the moved layout and returned through the inverse ``permute``. Loads along the
moved dimension are strided (correct everywhere, fastest when that dimension is short). Only graphs of
pointwise ops and reductions over that one dimension qualify; the rest stays :class:`Unsupported`.
"""

from __future__ import annotations

from kernelevo.search.offline.ir import Program, Unsupported, Value, appends_ones, size_product

_ALLOWED = ("input", "const", "hostfloat", "pw", "cast", "reduce", "global")


def merge_reduced_dims(prog: Program) -> None:
    """Rewrite ``prog`` in place so that reductions over the last ``k`` dims reduce one merged last dim.

    Every value that broadcasts against the op's full-rank tensors (aligned right, as PyTorch aligns them) gets
    those ``k`` dims merged: sizes equal to the reduced ones become their product, all-ones become one ``1``;
    anything else (a bias over only the last of them) is :class:`Unsupported`. Inputs are reshaped by the forward,
    full-rank outputs are returned as views in their original shape. Values computed from non-keepdim results
    live on the rows and keep their shape."""
    merged = [v for v in prog.values.values() if v.kind == "reduce" and v.attrs.get("merged", 1) > 1]
    if not merged:
        return
    src = merged[0].tensor_arg()
    rank, k = src.rank, merged[0].attrs["merged"]
    tail = src.shape[-k:]
    for r in (v for v in prog.values.values() if v.kind == "reduce"):
        if r.tensor_arg().rank != rank or r.attrs.get("merged", 1) != k or r.tensor_arg().shape[-k:] != tail:
            raise Unsupported("reductions over different dimensions in one op")
    for v in prog.values.values():
        if v.kind not in _ALLOWED + ("reshape",):
            raise Unsupported(f"{v.kind} together with a reduction over several dimensions")
        if v.kind == "reshape" and not appends_ones(v.shape, v.tensor_arg().shape):
            raise Unsupported("a reshape other than adding trailing ones, together with a reduction over several "
                              "dimensions")
    for v in list(prog.values.values()):  # inputs the kernels read only through a view of them (a group norm's x)
        if v.kind == "input" and v.rank == rank and not _read(prog, v):
            prog.values.pop(v.name)
    spread = _elementwise(prog, rank)
    product = size_product(tail)

    def merge(shape: tuple[str, ...]) -> tuple[tuple[str, ...], str]:
        """The merged shape, and for a tensor sized like only the first reduced dims (a group norm's per-channel
        weight ``[1, G, C / G, 1]``) the product of the others: column ``j`` reads its element ``j // that``."""
        padded = ("1",) * (rank - len(shape)) + shape
        if padded[-k:] == tail:
            return padded[:-k] + (product,), ""
        if all(d == "1" for d in padded[-k:]):
            return padded[:-k] + ("1",), ""
        for j in range(1, k):
            if padded[-k:-k + j] == tail[:j] and all(d == "1" for d in padded[-k + j:]):
                return padded[:-k] + (size_product(tail[:j]),), size_product(tail[j:])
        raise Unsupported(f"a tensor of shape [{', '.join(shape)}] broadcast against the {k} reduced dimensions")

    for i, o in enumerate(prog.outputs):
        if o.name in spread and i not in prog.output_views:
            prog.output_views[i] = o.shape
    for v in list(prog.values.values()):
        if v.kind == "reduce":
            attrs = v.attrs.copy()
            attrs.pop("merged", None)
            v.attrs = attrs
        if v.name not in spread or v.rank == 0:
            continue
        shape, coarse = merge(v.shape)
        if coarse and v in prog.outputs:
            raise Unsupported(f"an output sized like only some of the {k} reduced dimensions")
        if coarse and v.kind == "input":  # computed ones are emitted from such inputs, column by column
            v.attrs = {**v.attrs, "col_div": coarse}
        if v.kind == "input":
            new = f"{v.name}_merged"
            prog.host_lines.append(f"{new} = {v.name}.reshape({', '.join(shape)})")
            prog.values.pop(v.name, None)
            v.name = new
            prog.values[new] = v
        v.rank, v.shape = len(shape), shape


def _read(prog: Program, v: Value) -> bool:
    return v in prog.outputs or any(a is v for u in prog.values.values() for a in u.args)


def _elementwise(prog: Program, rank: int) -> set[str]:
    """Names of the values that broadcast against the full-rank ones: full-rank values and, down from them, the
    operands of their pointwise ops. A lower-rank input read both that way and per row is :class:`Unsupported`."""
    spread = {v.name for v in prog.values.values() if v.rank == rank}
    stack = [v for v in prog.values.values() if v.name in spread]
    while stack:
        v = stack.pop()
        if v.kind not in ("pw", "cast"):
            continue
        for a in v.args:
            if isinstance(a, Value) and a.name not in spread and a.rank > 0:
                spread.add(a.name)
                stack.append(a)
    for v in prog.values.values():
        if v.name in spread or v.kind not in ("pw", "cast"):
            continue
        for a in v.args:
            if isinstance(a, Value) and a.name in spread and a.rank < rank:
                raise Unsupported(f"{a.name} is used both per element and per row")
    return spread


def move_reduced_dim_last(prog: Program) -> None:
    """Rewrite ``prog`` in place so that every reduction is along the last dimension."""
    moved = [v for v in prog.values.values() if v.kind == "reduce" and v.attrs.get("dim") is not None]
    if not moved:
        return
    reds = [v for v in prog.values.values() if v.kind == "reduce"]
    rank = reds[0].tensor_arg().rank
    dim: int = moved[0].attrs["dim"]  # every reduction must be over this one (checked next)
    for r in reds:
        if r.tensor_arg().rank != rank or r.attrs.get("dim") != dim:
            raise Unsupported("reductions over different dimensions in one op")
    for v in prog.values.values():
        if v.kind not in _ALLOWED:
            raise Unsupported(f"{v.kind} together with a reduction over dim {dim}")
    perm = [i for i in range(rank) if i != dim] + [dim]
    uses: dict[str, set[int]] = {}
    for v in prog.values.values():
        for a in v.args:
            if isinstance(a, Value) and a.kind == "input":
                uses.setdefault(a.name, set()).add(v.rank if v.kind != "reduce" else a.rank)
    for v in list(prog.values.values()):
        if v.kind == "input":
            ranks = uses.get(v.name, set())
            if ranks == {rank}:
                view_moved(prog, v, rank, perm)
            elif rank in ranks:
                raise Unsupported(f"input {v.name} is used both per element and per row")
        elif v.rank == rank:
            v.shape = tuple(v.shape[i] for i in perm)
        elif v.rank not in (0, rank - 1):
            raise Unsupported(f"{v.name} has rank {v.rank} next to a rank-{rank} reduction")
        if v.kind == "reduce":
            attrs = v.attrs.copy()
            attrs.pop("dim", None)
            v.attrs = attrs
    inverse = [perm.index(i) for i in range(rank)]
    for i, o in enumerate(prog.outputs):
        if o.rank == rank:
            prog.output_perms[i] = inverse


def view_moved(prog: Program, v: Value, rank: int, perm: list[int]) -> None:
    """Input ``v`` padded to ``rank`` dimensions and permuted by ``perm``, as a view the forward takes."""
    pad = rank - v.rank
    padded = ("1",) * pad + tuple(v.shape)
    base = f"{v.name}.reshape({[1] * pad} + list({v.name}.shape))" if pad else v.name
    new = f"{v.name}_moved"
    prog.host_lines.append(f"{new} = {base}.permute({', '.join(map(str, perm))})")
    prog.values.pop(v.name, None)
    v.name, v.rank, v.shape = new, rank, tuple(padded[i] for i in perm)
    prog.values[new] = v
