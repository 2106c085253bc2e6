"""What the generator needs to know about a lowered op: its domain, reductions and outputs."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from kernelevo.search.offline.conv import move_channels_last, node_problem
from kernelevo.search.offline.ir import Operand, Program, Unsupported, Value, mark_exact
from kernelevo.search.offline.lower import HANDLED, HOST_ARITHMETIC, dead, op_name
from kernelevo.search.offline.moves import merge_reduced_dims, move_reduced_dim_last
from kernelevo.search.offline.trace import TracedTask
from kernelevo.search.offline.window import node_problem as window_problem


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
    conv: Value | None = None  # the convolution the kernel computes as an implicit GEMM (conv.py)
    scans: list[Value] = field(default_factory=list)  # cumulative sums along the row


def analyse(prog: Program) -> Analysis:
    """Find the op's domain (leading dims x last dim), its reductions and the kind of each output."""
    merge_reduced_dims(prog)
    conv = move_channels_last(prog)
    move_reduced_dim_last(prog)
    if set(prog.output_perms) & set(prog.output_views):
        raise Unsupported("an output returned through a view of a tensor computed in a moved layout")
    read = {a.name for v in prog.values.values() for a in v.args if isinstance(a, Value)} | {
        o.name for o in prog.outputs}
    # inputs no kernel reads (views the forward takes on the way to others, a GQA key's 5-D expand) set no rank
    lane = [v for v in prog.values.values() if v.kind not in ("global", "hostfloat", "const")
            and (v.kind != "input" or v.name in read)]
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
    if matmuls and any(r.tensor_arg().shape[-1] != matmuls[0].shape[-1] for r in reductions):
        raise Unsupported("a matmul followed by a reduction over another width than its columns")
    if conv is not None and (matmuls or reductions):
        raise Unsupported("a convolution together with a matmul or a reduction (only pointwise epilogues are fused)")
    anchor = reductions[0].tensor_arg() if reductions else (matmuls[0] if matmuls else conv)
    if anchor is not None and anchor.kind == "matmul" and anchor.rank != rank:
        anchor = None  # a batched matmul viewed with more leading dims: rows are numbered by the output's
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
    scans = [v for v in prog.values.values() if v.kind == "scan"]
    if scans and (matmuls or conv is not None):
        raise Unsupported("a cumulative sum together with a matmul or a convolution")
    mark_exact(prog)
    return Analysis(rank, list(anchor.shape[:-1]), reductions, levels, full, row, glob, globals_,
                    matmuls[0] if matmuls else None, widths, conv, scans)


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


class UnsupportedOp(BaseModel):
    """One ATen op of the user's forward that the offline generator does not lower, and where it came from."""

    aten: str  # "aten.convolution"; "" for the graph as a whole (every strategy refuses it: ``why`` says how)
    line: int | None = None  # 1-based line of the task source the call was traced from (None: unknown)
    code: str = ""  # that line, stripped
    count: int = 1  # how many calls of this op the graph holds
    why: str = ""  # for an op lowered only in some forms (a convolution): why this call's form is not

    def describe(self) -> str:
        """``aten.x at line N (code) xK: why`` (no line where the trace recorded none: a decorated op's own
        function, whose frames the tracer keeps no line of); for the graph as a whole (no ``aten``), the reason
        alone."""
        if not self.aten:
            return self.why
        where = f" at line {self.line} ({self.code})" if self.line is not None else ""
        times = f" x{self.count}" if self.count > 1 else ""
        return f"{self.aten}{where}{times}" + (f": {self.why}" if self.why else "")


# why ops of a kind the generator has no mechanism for are not lowered (said with the op)
_WINDOW = ("a sliding-window op the offline proposer does not lower: it pools 2-D windows (avg_pool2d, max_pool2d, "
           "avg_pool1d) with fixed kernel, stride and padding only")
NOT_LOWERED = {"avg_pool3d": _WINDOW, "max_pool3d_with_indices": _WINDOW, "_adaptive_avg_pool2d": _WINDOW,
               "adaptive_max_pool2d": _WINDOW, "_adaptive_avg_pool3d": _WINDOW}

ADVICE = ("The offline proposer cannot write a kernel for this op. What you can do: write the kernel by hand "
          "(kernels/<op>/ in the repo layout), search with the LLM proposer (--proposer llm with "
          "KERNELEVO_LLM_BASE_URL set), or split the op so that the unsupported call stays in PyTorch and the "
          "rest is a separate @kernelevo.optimize op.")


def _task_line(stack_trace: str | None) -> int | None:
    """The last line of the task's own source in a node's recorded stack trace."""
    if not stack_trace:
        return None
    found = None
    for match in re.finditer(r'File "<kernelevo_task>", line (\d+)', stack_trace):
        found = int(match.group(1))
    return found


def unsupported_ops(traced: TracedTask) -> list[UnsupportedOp]:
    """The ATen ops of a traced task that the lowering has no rule for (empty: every op is known, though a
    known op may still be used in a way the generator refuses; ``lower`` then says which). Pure: reads the
    graph only, so the search can call it right after tracing, before any baseline is measured."""
    import operator

    found: dict[str, UnsupportedOp] = {}
    for node in traced.graph.graph.nodes:
        if node.op != "call_function" or node.target in HOST_ARITHMETIC or node.target is operator.getitem:
            continue
        name = op_name(node.target)
        why = (node_problem(node) or window_problem(node)) if name in HANDLED else ""
        if why is None or dead(node):
            continue
        key = f"aten.{name}"
        if key in found:
            found[key].count += 1
            continue
        found[key] = UnsupportedOp(aten=key, **_located(traced, node), why=why or NOT_LOWERED.get(name, ""))
    return list(found.values())


def _located(traced: TracedTask, node: Any) -> dict[str, Any]:
    """``line`` and ``code``: where in the task's source a graph call was traced from (None and "" if unknown)."""
    line = _task_line(node.meta.get("stack_trace")) if node is not None else None
    lines = traced.source.splitlines()
    return {"line": line, "code": lines[line - 1].strip()[:160] if line is not None and 0 < line <= len(lines) else ""}


def unsupported_in_lowering(traced: TracedTask, problem: str, node: Any) -> UnsupportedOp:
    """A known op used in a form the lowering refuses (``lower`` raised ``problem`` on ``node``), located in the
    user's source like :func:`unsupported_ops` locates an unknown op."""
    if node is None:  # the graph as a whole, not one call of it
        return UnsupportedOp(aten="", why=problem)
    return UnsupportedOp(aten=f"aten.{op_name(node.target)}", **_located(traced, node), why=problem)


def unsupported_message(ops: list[UnsupportedOp], op_id: str = "") -> str:
    """One actionable message for the user: which ATen ops, where in their op, and what they can do."""
    if not ops:
        return ""
    what = "; ".join(u.describe() for u in ops)
    head = f"op {op_id}: " if op_id else ""
    return f"{head}not supported by the offline proposer: {what}. {ADVICE}"
