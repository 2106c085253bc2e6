"""Split reductions (``rowwise-split``): rows too wide for one program's loop to be fast, in two stages.

One row per program (``rowwise-looped``) leaves a 1 x 1M softmax, RMSNorm or sum on a single SM. Here each row
is cut into ``n_splits`` chunks of ``SPLIT_COLS`` columns and the grid has ``rows * n_splits`` programs:

1. ``<op>_partial_kernel``: each program reduces its chunk and stores one partial result per reduction
   (sums, maxima, minima; for softmax the chunk's running maximum and its sum of exponentials rescaled to it);
2. ``<op>_finish_kernel``: each program combines its row's partials (a ``BLOCK_SPLITS`` tile: ``tl.sum`` /
   ``tl.max``, or the online-softmax rescaling ``sum(s_i * exp(m_i - max m))``), then writes the full-width
   outputs of its own chunk; the program of chunk 0 writes the row's per-row outputs.

Reductions of one level only (a softmax, an RMSNorm, a sum or max over a row): a reduction that needs another
one's result (layer norm's variance needs the mean) would need a stage per level, and stays with
``rowwise-looped``. The strategy is offered for rows wider than one tile (``module.applicable``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernelevo.search.offline.ir import ARG_REDUCTIONS, Unsupported, Value

if TYPE_CHECKING:
    from kernelevo.search.offline.kernels import KernelWriter

_IDENTITY = {"sum": "0.0", "max": 'float("-inf")', "min": 'float("inf")', "online": "0.0"}


@dataclass(frozen=True)
class Partial:
    """One partial result per (row, chunk): its buffer, the reduction it belongs to and how chunks combine."""

    name: str  # the buffer (a float32 [rows, n_splits] tensor) and its kernel pointer, ``<name>_ptr``
    value: Value
    combine: str  # sum|max|min|online (a sum of exponentials rescaled to the maximum in ``of_max``)
    of_max: str = ""  # online: the Partial holding the chunks' maxima


def _prologue(w: KernelWriter) -> None:
    w.body += ["    pid = tl.program_id(0).to(tl.int64)", "    split = pid % n_splits"]
    w.prologue("(pid // n_splits) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]")
    w.body.append("    chunk_start = split * SPLIT_COLS  # this program's columns, SPLIT_COLS of them")
    w.loop_range = "chunk_start, chunk_start + SPLIT_COLS"


def split_problem(w: KernelWriter) -> str | None:
    """Why the op cannot be split this way (None: it can)."""
    an = w.an
    if not an.reductions:
        return "rowwise-split needs a row reduction"
    if an.scans:
        return "rowwise-split does not carry a cumulative sum across chunks (rowwise-looped does)"
    if any(r.attrs["op"] in ARG_REDUCTIONS for r in an.reductions):
        return "rowwise-split does not combine argmax/argmin (rowwise-looped does)"
    if an.globals_:
        return "rowwise-split does not combine full reductions (rowwise-looped does)"
    if len(an.widths) != 1:
        return "rowwise-split needs reductions and outputs of one row width"
    fused = {s.name for s in w.online_pairs().values()}
    if any(an.levels[r.name] != 1 for r in an.reductions if r.name not in fused):
        return ("rowwise-split needs reductions of one level (one that reads another's result, as a variance "
                "reads the mean, needs the rowwise-looped strategy)")
    return None


def partial_kernel(w: KernelWriter) -> list[Partial]:
    """Stage 1: reduce this program's chunk of its row; returns the partial buffers it writes."""
    problem = split_problem(w)
    if problem is not None:
        raise Unsupported(problem)
    _prologue(w)
    w.online = w.online_pairs()
    fused = {s.name for s in w.online.values()}
    reds = [r for r in w.an.reductions if r.name not in fused]
    w.loop(w.an.widths[0], reds, [])
    partials: list[Partial] = []
    for r in reds:
        op = r.attrs["op"]
        partials.append(Partial(f"part{len(partials)}", r, "sum" if op in ("sum", "mean") else op))
        partner = w.online.get(r.name)
        if partner is not None:
            partials.append(Partial(f"part{len(partials)}", partner, "online", partials[-1].name))
    w.body.append("    # one partial result per reduction for this (row, chunk)")
    for p in partials:
        ptr = w.em.pointer(p.name)
        w.body.append(f"    tl.store({ptr} + rows * n_splits + split, {w.em.finished[p.value.name]}.to(tl.float32), "
                      "mask=row_mask)")
    return partials


def finish_kernel(w: KernelWriter, partials: list[Partial]) -> None:
    """Stage 2: combine the row's partials, then write this chunk's outputs (and, in chunk 0, the row's)."""
    _prologue(w)
    w.online = {}
    w.body += ["    parts = tl.arange(0, BLOCK_SPLITS)[None, :]", "    part_mask = row_mask & (parts < n_splits)"]
    by_name = {p.name: p for p in partials}
    for p in partials:
        ptr = w.em.pointer(p.name)
        w.body.append(f"    {p.name} = tl.load({ptr} + rows * n_splits + parts, mask=part_mask, "
                      f"other={_IDENTITY[p.combine]})")
    for p in sorted(partials, key=lambda p: p.combine == "online"):  # maxima before the sums rescaled to them
        var = f"{p.value.name}_row"
        if p.combine == "online":
            m = by_name[p.of_max]
            safe = f"{m.value.name}_row_safe"
            w.body.append(f'    {safe} = tl.where({m.value.name}_row == float("-inf"), 0.0, {m.value.name}_row)')
            w.body.append(f"    {var} = tl.sum({p.name} * tl.exp({m.name} - {safe}), axis=1, keep_dims=True)")
        else:
            fn = {"sum": "tl.sum", "max": "tl.max", "min": "tl.min"}[p.combine]
            w.body.append(f"    {var} = {fn}({p.name}, axis=1, keep_dims=True)")
        w.em.finished[p.value.name] = var
    if w.an.full_outputs:
        w.loop(w.an.widths[0], [], list(w.an.full_outputs))
    if w.an.row_outputs:
        w.body.append("    row_mask = row_mask & (rows * 0 + split == 0)  # one program per row writes the row values")
    w.store_row_values()


def launch_lines(name: str, partials: list[Partial], first: str, widest: str, stage1: tuple[list[str], list[str]],
                 stage2: tuple[list[str], list[str]]) -> list[str]:
    """The forward's part for the two stages (``stage*``: each kernel's pointer, size and stride arguments, and
    its extra launch keywords)."""
    lines = [
        "        block_cols = BLOCK_COLS",
        "        split_cols = max(SPLIT_TILE, block_cols)  # whole column blocks per chunk (both powers of two)",
        f"        n_splits = triton.cdiv({widest}, split_cols)",
        "        grid = (n_rows * n_splits,)",
    ]
    for p in partials:
        lines.append(f"        {p.name} = torch.empty((n_rows, n_splits), device={first}.device, dtype=torch.float32)")
    common = ["BLOCK_ROWS=1", "BLOCK_COLS=block_cols", "SPLIT_COLS=split_cols", "num_warps=NUM_WARPS"]
    from kernelevo.search.offline.module import _wrap_call

    lines += _wrap_call(f"        {name}_partial_kernel[grid](", stage1[0] + common + ["num_stages=NUM_STAGES"]
                        + stage1[1])
    lines += _wrap_call(f"        {name}_finish_kernel[grid](", stage2[0] + common
                        + ["BLOCK_SPLITS=triton.next_power_of_2(n_splits)", "num_stages=NUM_STAGES"] + stage2[1])
    return lines
