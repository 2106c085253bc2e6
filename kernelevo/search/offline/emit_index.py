"""Triton expressions for index-built values (see ``indexing.py``): iotas, gathers of table rows, bags.

An iota is the position itself: ``i<d>`` (the row's index in leading dimension ``d``, which every row
kernel's prologue computes) or the column expression, scaled and shifted; nothing is loaded. A gather
loads the row's index once and reads the table row it names; a bag loops over the bag's indices.
Indices outside the table are read as zeros (PyTorch raises for them; the kernel must not read past the
table): ``weight[idx]`` first wraps negative indices as PyTorch does, ``embedding`` does not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelevo.search.offline.ir import Unsupported, Value

if TYPE_CHECKING:
    from kernelevo.search.offline.emit import Col, Emitter


def _host_int(em: Emitter, expr: str, hint: str) -> str:
    """An integer literal as is, any other host expression as a kernel argument."""
    try:
        return str(int(expr))
    except ValueError:
        return em.scalar(expr, hint)


def iota(em: Emitter, v: Value, col: Col, ctx: int) -> tuple[str, str, str]:
    """``start + position * step`` at the position ``col`` / the row stands for in context rank ``ctx``."""
    from kernelevo.search.offline.emit import kind_of

    shape = ["1"] * (ctx - v.rank) + list(v.shape)
    if len(shape) != ctx:
        raise Unsupported(f"{v.name}: an arange with more dimensions than the op's domain")
    varying = [d for d, size in enumerate(shape) if size != "1"]
    scope, position = "row", "0"
    if varying:
        d = varying[0]
        n_lead = ctx - 1 if ctx == em.rank else ctx
        if ctx == em.rank and d == ctx - 1:
            if col.kind == "none":
                raise Unsupported(f"{v.name}: an arange along the last dimension used per row")
            position, scope = col.var, ("row" if col.kind == "row" else "loop")
        elif d < n_lead:
            position = f"i{d}"
        else:
            raise Unsupported(f"{v.name}: an arange along a dimension the kernel does not index")
    start = _host_int(em, v.attrs["start"], f"{v.name}_start")
    step = _host_int(em, v.attrs["step"], f"{v.name}_step")
    expr = position if step == "1" else f"{position} * {step}"
    if start != "0":
        expr = f"({start} + {expr})"
    kind = kind_of(v.dtype)
    if kind == "f":
        expr = f"({expr}).to(tl.float32)"
    return expr, scope, kind


def _checked_index(em: Emitter, raw: str, weight: Value, wrap: bool, scope: str) -> tuple[str, str]:
    """(index variable, in-table predicate variable) for an index expression of the table ``weight``."""
    n_rows = em.scalar(f"{weight.name}.shape[0]", f"{weight.name}_nrows")
    idx = em.fresh("table_row_")
    em._put(scope, f"{idx} = ({raw}).to(tl.int64)")
    if wrap:  # weight[idx] counts negative indices from the end, as Python does
        em._put(scope, f"{idx} = tl.where({idx} < 0, {idx} + {n_rows}, {idx})")
    ok = em.fresh("in_table_")
    em._put(scope, f"{ok} = ({idx} >= 0) & ({idx} < {n_rows})")
    return idx, ok


def _table_pointer(em: Emitter, weight: Value) -> tuple[str, str, str]:
    """The gathered table's pointer and its row and column strides, as kernel arguments."""
    return (em.pointer(weight.name), em.scalar(f"{weight.name}.stride(0)", f"{weight.name}_stride0"),
            em.scalar(f"{weight.name}.stride(1)", f"{weight.name}_stride1"))


def _table_load(em: Emitter, weight: Value, idx: str, ok: str, col: Col, other: str = "0") -> str:
    ptr, s0, s1 = _table_pointer(em, weight)
    if col.kind == "base":
        mask = f"{col.mask} & {ok}"
    else:
        width = em.scalar(f"{weight.name}.shape[1]", f"{weight.name}_ncols")
        mask = f"row_mask & {ok} & ({col.var} >= 0) & ({col.var} < {width})"
    return f"tl.load({ptr} + {idx} * {s0} + {col.var} * {s1}, mask={mask}, other={other}).to(tl.float32)"


def gather(em: Emitter, v: Value, col: Col, ctx: int) -> tuple[str, str, str]:
    """A table row per row of the domain: the row's index is loaded once, then the row is read."""
    from kernelevo.search.offline.emit import NO_COL

    weight, index = v.tensor_arg(0), v.tensor_arg(1)
    if ctx != em.rank or col.kind == "none":
        raise Unsupported(f"{v.name}: a gathered table row used per row")
    if "table_dim" in v.attrs:
        return _gather_across(em, v, col, ctx)
    raw, _, _ = em.emit(index, NO_COL, ctx - 1)
    idx, ok = _checked_index(em, raw, weight, v.attrs.get("wrap", False), "row")
    return _table_load(em, weight, idx, ok, col), "row" if col.kind == "row" else "loop", "f"


def _gather_across(em: Emitter, v: Value, col: Col, ctx: int) -> tuple[str, str, str]:
    """A gather whose table columns run along leading dim ``table_dim`` (a permuted ``table[idx]``): each element
    loads its own index (the index is viewed to the gather's shape, one along ``table_dim``) and reads the table
    at that row and at the column given by the row's position in ``table_dim``."""
    weight, index = v.tensor_arg(0), v.tensor_arg(1)
    d = v.attrs["table_dim"] + ctx - v.rank
    if not 0 <= d < ctx - 1:
        raise Unsupported(f"{v.name}: a gather whose table columns run along a dimension the kernel does not index")
    raw, scope, _ = em.emit(index, col, ctx)
    idx, ok = _checked_index(em, raw, weight, v.attrs.get("wrap", False), scope)
    ptr, s0, s1 = _table_pointer(em, weight)
    if col.kind == "base":
        mask = f"{col.mask} & {ok}"
    else:
        mask = f"row_mask & {ok}"
    return f"tl.load({ptr} + {idx} * {s0} + i{d} * {s1}, mask={mask}, other=0).to(tl.float32)", scope, "f"


def bag(em: Emitter, v: Value, col: Col, ctx: int) -> tuple[str, str, str]:
    """sum/mean/max/min of the table rows a bag of indices names: a loop over the bag's positions."""
    weight, index = v.tensor_arg(0), v.tensor_arg(1)
    if ctx != em.rank or v.rank != em.rank or col.kind == "none":
        raise Unsupported(f"{v.name}: an embedding bag used per row")
    k = index.rank - 1  # the bag dimension; the dimensions before it are the output's leading ones
    em.pointer(index.name)
    terms = [f"i{d} * {em.scalar(f'{index.name}.stride({d})', f'{index.name}_stride{d}')}" for d in range(k)]
    row = em.fresh(f"{index.name}_bag_row")
    em._put("row", f"{row} = {index.name}_ptr + {' + '.join(terms) if terms else '0'}")
    length = em.scalar(f"{index.name}.shape[{k}]", f"{index.name}_bag_len")
    step = em.scalar(f"{index.name}.stride({k})", f"{index.name}_stride{k}")
    op = v.attrs["op"]
    identity = {"sum": "0.0", "mean": "0.0", "max": 'float("-inf")', "min": 'float("inf")'}[op]
    scope = "row" if col.kind == "row" else "loop"
    acc, j = em.fresh("bag_acc"), em.fresh("bag_j")
    shape = "[BLOCK_ROWS, 1]" if col.kind == "row" else "[BLOCK_ROWS, BLOCK_COLS]"
    em._put(scope, f"{acc} = tl.full({shape}, {identity}, dtype=tl.float32)")
    em._put(scope, f"for {j} in range(0, {length}):")
    inner: list[str] = []
    raw = f"tl.load({row} + {j} * {step}, mask=row_mask, other=0)"
    idx, ok = em.fresh("table_row_"), em.fresh("in_table_")
    n_rows = em.scalar(f"{weight.name}.shape[0]", f"{weight.name}_nrows")
    inner.append(f"{idx} = {raw}.to(tl.int64)")
    if v.attrs.get("wrap", False):
        inner.append(f"{idx} = tl.where({idx} < 0, {idx} + {n_rows}, {idx})")
    inner.append(f"{ok} = ({idx} >= 0) & ({idx} < {n_rows})")
    picked = _table_load(em, weight, idx, ok, col)
    if op in ("sum", "mean"):
        inner.append(f"{acc} += {picked}")
    else:
        inner.append(f"{acc} = tl.{'maximum' if op == 'max' else 'minimum'}({acc}, {picked})")
    for line in inner:
        em._put(scope, "    " + line)
    if op == "mean":
        return f"{acc} / {length}", scope, "f"
    return acc, scope, "f"
