"""What the generator needs to know about a lowered op: its domain, reductions and outputs."""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelevo.search.offline.ir import Operand, Program, Unsupported, Value
from kernelevo.search.offline.moves import move_reduced_dim_last


@dataclass
class Analysis:
    """What the generator needs to know about a lowered program."""

    rank: int
    lead: list[str]
    reductions: list[Value]
    levels: dict[str, int]
    full_outputs: list[tuple[int, Value]]
    row_outputs: list[tuple[int, Value]]
    global_outputs: list[tuple[int, Value]]
    globals_: list[Value]
    matmul: Value | None
    widths: list[str] = field(default_factory=list)


def analyse(prog: Program) -> Analysis:
    """Find the op's domain (leading dims x last dim), its reductions and the kind of each output."""
    move_reduced_dim_last(prog)
    lane = [v for v in prog.values.values() if v.kind not in ("global", "hostfloat", "const")]
    rank = max((v.rank for v in lane), default=1)
    _split_full_reductions(prog, rank)
    levels: dict[str, int] = {}

    def level(v: Operand) -> int:
        if not isinstance(v, Value):
            return 0
        if v.name not in levels:
            base = max((level(a) for a in v.args), default=0)
            levels[v.name] = base + 1 if v.kind == "reduce" else base
        return levels[v.name]

    for v in prog.outputs:
        level(v)
    reductions = [v for v in prog.values.values() if v.kind == "reduce"]
    for r in reductions:
        if r.tensor_arg().rank != rank:
            raise Unsupported(f"{r.name} reduces a tensor of rank {r.tensor_arg().rank}, the op's rank is {rank}")
    matmuls = [v for v in prog.values.values() if v.kind == "matmul"]
    if len(matmuls) > 1:
        raise Unsupported("more than one matmul")
    if matmuls and reductions:
        raise Unsupported("a matmul followed by a reduction")
    anchor = reductions[0].tensor_arg() if reductions else (matmuls[0] if matmuls else None)
    if anchor is None:
        anchor = next((o for o in prog.outputs if o.rank == rank), None)
    if anchor is None:
        raise Unsupported("no output has the op's full rank")
    full, row, glob = [], [], []
    for i, o in enumerate(prog.outputs):
        if o.rank == 0 and o.kind != "reduce":
            glob.append((i, o))
        elif (o.rank == rank and o.shape[-1] == "1") or o.rank == rank - 1:
            row.append((i, o))
        elif o.rank == rank:
            full.append((i, o))
        else:
            raise Unsupported(f"output {i} has rank {o.rank}; the op's rank is {rank}")
    globals_ = [v for v in prog.values.values() if v.kind == "global"]
    widths = []
    for w in [r.tensor_arg().shape[-1] for r in reductions] + [o.shape[-1] for _, o in full]:
        if w not in widths:
            widths.append(w)
    return Analysis(rank, list(anchor.shape[:-1]), reductions, levels, full, row, glob, globals_,
                    matmuls[0] if matmuls else None, widths)


def _split_full_reductions(prog: Program, rank: int) -> None:
    """A reduction of a whole full-rank tensor becomes a row reduction (one value per row) followed,
    when there is more than one row, by a reduction of those per-row values."""
    for g in [v for v in list(prog.values.values()) if v.kind == "global"]:
        src = g.tensor_arg()
        if src.rank != rank or rank == 0:
            continue
        if rank == 1:  # a single row: the row reduction is the result
            g.kind, g.attrs = "reduce", {**g.attrs, "keepdim": False}
            continue
        per_row = Value(f"{g.name}_per_row", "reduce", (src,), rank - 1, src.shape[:-1], g.dtype,
                        {"op": g.attrs["op"], "keepdim": False})
        prog.values[per_row.name] = per_row
        g.args = (per_row,)
