"""Kernel bodies for the offline strategies (MAP-Elites cells).

- ``rowwise-1pass``: one tile of whole rows per program; every reduction along the last dimension
  is a ``tl.sum``/``tl.max`` over the tile (best when a row fits in registers).
- ``rowwise-looped``: one row per program, a loop over column blocks per reduction level
  (softmax: max, then sum of exponentials, then the store), for rows too long for registers.
- ``rowwise-split``: rows cut into chunks, a partial result per chunk, then a combining kernel that also
  writes the outputs (``split.py``), for rows so wide that one program per row leaves the GPU idle.
- ``pointwise-tile2d``: (row block, column block) tiles on a 1-D grid; no reductions.
- ``matmul-tiled``: a grouped-ordering tiled ``tl.dot`` loop with the pointwise epilogue applied
  to the fp32 accumulator before the store.
- ``conv-implicit-gemm``: a convolution as a tiled GEMM over output positions x output channels, its
  input tiles addressed im2col-style in the kernel (``conv.py``), the epilogue as for the matmul.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelevo.search.offline.analysis import Analysis, analyse
from kernelevo.search.offline.emit import NO_COL, Col, Emitter
from kernelevo.search.offline.ir import ARG_REDUCTIONS, Program, Unsupported, Value

if TYPE_CHECKING:
    import torch

__all__ = ["Analysis", "KernelWriter", "analyse", "global_kernel_body"]


class KernelWriter:
    """Writes one kernel's body for a strategy; collects its arguments while doing so."""

    def __init__(self, prog: Program, an: Analysis, strategy: str, helpers: set[str]):
        self.prog, self.an, self.strategy = prog, an, strategy
        self.em = Emitter(an.rank, an.lead, helpers)
        self.em.blocked = strategy == "rowwise-looped"
        self.body: list[str] = []
        self.flushed = 0
        self.partials: list[tuple[str, Value]] = []
        self.grid = ""  # the launch grid as host source, where the strategy sets it (conv-implicit-gemm)
        self.whole_row_width = ""  # matmul-tiled with a row epilogue: N, which one column tile must cover
        self.loop_range = ""  # the column loops' start and end (rowwise-split: its chunk), default the whole row
        self.online: dict[str, Value] = {}

    # -- pieces ------------------------------------------------------------------------------
    def width(self, expr: str) -> str:
        return self.em.scalar(expr, "n_cols")

    def flush_row_lines(self, indent: str = "    ") -> None:
        for line in self.em.row_lines[self.flushed:]:
            self.body.append(indent + line)
        self.flushed = len(self.em.row_lines)

    def prologue(self, rows_expr: str) -> None:
        self.body.append(f"    rows = {rows_expr}")
        self.body.append("    row_mask = rows < n_rows")
        self.lead_indices()

    def lead_indices(self) -> None:
        """``i0, i1, ...``: each row's position in the op's leading dims, from its flat index ``rows``."""
        lead = self.an.lead
        if lead:
            self.body.append(f"    # where each row sits in the leading dims [{', '.join(lead)}]")
        inner: list[str] = []
        for d in range(len(lead) - 1, -1, -1):
            if d == 0:
                divisor = " * ".join(inner)
                self.body.append(f"    i0 = rows // ({divisor})" if inner else "    i0 = rows")
            else:
                size = self.em.scalar(lead[d], f"dim{d}")
                prefix = f"(rows // ({' * '.join(inner)}))" if inner else "rows"
                self.body.append(f"    i{d} = {prefix} % {size}")
                inner.append(size)

    def reduce_expr(self, r: Value, expr: str, mask: str) -> tuple[str, str]:
        """(masked value to accumulate, identity) for reduction ``r``."""
        op = r.attrs["op"]
        if op in ARG_REDUCTIONS:  # compared as float32: NaN is greater (smaller) than everything, as in torch
            bound = 'float("-inf")' if op == "argmax" else 'float("inf")'
            return f"tl.where({mask}, {expr}.to(tl.float32), {bound})", bound
        if op in ("sum", "mean"):
            return f"tl.where({mask}, {expr}, 0.0)", "0.0"
        if op == "max":
            return f"tl.where({mask}, {expr}, float(\"-inf\"))", 'float("-inf")'
        if op == "min":
            return f"tl.where({mask}, {expr}, float(\"inf\"))", 'float("inf")'
        raise Unsupported(f"reduction {op}")

    @staticmethod
    def arg_lines(r: Value, values: str, indices: str, mask: str) -> list[str]:
        """``{r}_row``: per row, the smallest index among ``indices`` (a tile) whose value in ``values`` is the
        maximum (argmax) or the minimum (argmin); a NaN wins over any number, the first NaN over later ones."""
        best = "tl.max" if r.attrs["op"] == "argmax" else "tl.min"
        v, i = f"{r.name}_vals", f"{r.name}_idx"
        NONE = 2**62  # noqa: N806 - no index: larger than any column
        return [
            f"{v} = {values}",
            f"{i} = ({indices}).to(tl.int64)",
            f"{r.name}_nan = {mask} & ({v} != {v})",
            f"{r.name}_best = {best}(tl.where({r.name}_nan, 0.0, {v}), axis=1, keep_dims=True)",
            f"{r.name}_first = tl.min(tl.where({mask} & ({v} == {r.name}_best), {i}, {NONE}), axis=1, "
            "keep_dims=True)",
            f"{r.name}_first_nan = tl.min(tl.where({r.name}_nan, {i}, {NONE}), axis=1, keep_dims=True)",
            f"{r.name}_first = tl.where({r.name}_first == {NONE}, 0, {r.name}_first)  # a row of padding only",
            f"{r.name}_row = tl.where({r.name}_first_nan < {NONE}, {r.name}_first_nan, {r.name}_first)",
        ]

    def finish(self, r: Value, total: str, width: str) -> str:
        if r.attrs["op"] == "mean":
            return f"{total} / {width}"
        return total

    def combine(self, r: Value) -> str:
        return {"sum": "tl.sum", "mean": "tl.sum", "max": "tl.max", "min": "tl.min"}[r.attrs["op"]]

    def store_outputs(self, cols: Col, outputs: list[tuple[int, Value]]) -> None:
        for i, o in outputs:
            expr = self.em.emit(o, cols, self.an.rank)[0]
            ncols = self.width(o.shape[-1])
            ptr = self.em.pointer(f"out{i}")
            self.em.loop_lines.append(
                f"tl.store({ptr} + rows * {ncols} + {cols.var}, {expr}.to({ptr}.dtype.element_ty), "
                f"mask={cols.mask})")

    def store_row_values(self) -> None:
        for i, o in self.an.row_outputs:
            expr = self.em.emit(o, NO_COL, o.rank)[0]
            ptr = self.em.pointer(f"out{i}")
            self.em.row_lines.append(f"tl.store({ptr} + rows, {expr}.to({ptr}.dtype.element_ty), mask=row_mask)")
        for g in self.an.globals_:
            src = g.tensor_arg()
            if not ((src.rank == self.an.rank and src.shape[-1] == "1") or src.rank == self.an.rank - 1):
                raise Unsupported(f"{g.name} reduces a tensor that is not one value per row")
            expr = self.em.emit(src, NO_COL, src.rank)[0]
            name = f"partial{len(self.partials)}"
            self.partials.append((name, g))
            ptr = self.em.pointer(name)
            self.em.row_lines.append(f"tl.store({ptr} + rows, {expr}.to(tl.float32), mask=row_mask)")
        self.flush_row_lines()

    # -- strategies --------------------------------------------------------------------------
    def one_pass(self) -> None:
        self.prologue("tl.program_id(0).to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]")
        self.body.append("    cols = tl.arange(0, BLOCK_COLS)[None, :]")
        self.em.loop_lines = self.em.row_lines  # one straight-line block: keep emission order
        masks: dict[str, str] = {}  # column width -> its mask variable
        for w in self.an.widths:
            masks[w] = f"mask_{len(masks)}" if len(self.an.widths) > 1 else "mask"
            self.em.row_lines.append(f"{masks[w]} = row_mask & (cols < {self.width(w)})")
        self.whole_row_reductions(masks)
        for w in self.an.widths:
            outs = [(i, o) for i, o in self.an.full_outputs if o.shape[-1] == w]
            self.store_outputs(Col("cols", "base", masks[w]), outs)
        self.store_row_values()

    def whole_row_reductions(self, masks: dict[str, str]) -> None:
        """Every reduction over a row that lies whole in the tile (``masks``: column width -> its mask), in the
        order they read each other: each becomes ``<name>_row``."""
        for r in sorted(self.an.reductions, key=lambda r: self.an.levels[r.name]):
            w = r.tensor_arg().shape[-1]
            col = Col("cols", "base", masks[w])
            expr = self.em.emit(r.args[0], col, self.an.rank)[0]
            masked, _ = self.reduce_expr(r, expr, masks[w])
            var = f"{r.name}_row"
            if r.attrs["op"] in ARG_REDUCTIONS:
                self.em.row_lines += self.arg_lines(r, masked, "cols", masks[w])
            else:
                total = f"{self.combine(r)}({masked}, axis=1, keep_dims=True)"
                self.em.row_lines.append(f"{var} = {self.finish(r, total, self.width(w))}")
            self.em.finished[r.name] = var

    def online_pairs(self) -> dict[str, Value]:
        """max-name -> the sum(exp(x - max(x))) reduction over the same x (softmax's two passes,
        which one loop computes with the online rescaling trick)."""
        pairs: dict[str, Value] = {}
        for s_red in self.an.reductions:
            src = s_red.tensor_arg()
            if s_red.attrs["op"] != "sum" or src.kind != "pw" or src.attrs["op"] != "exp":
                continue
            sub = src.args[0]
            if not (isinstance(sub, Value) and sub.kind == "pw" and sub.attrs["op"] == "sub"):
                continue
            x, m = sub.args
            if isinstance(m, Value) and m.kind == "reduce" and m.attrs["op"] == "max" and m.args[0] is x \
                    and m.rank == s_red.rank and m.name not in pairs:
                pairs[m.name] = s_red
        return pairs

    def looped(self) -> None:
        self.prologue("tl.program_id(0).to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]")
        self.online = self.online_pairs()
        fused = {s_red.name for s_red in self.online.values()}
        by_level: dict[int, list[Value]] = {}
        for r in self.an.reductions:
            if r.name not in fused:
                by_level.setdefault(self.an.levels[r.name], []).append(r)
        for lvl in sorted(by_level):
            groups: dict[str, list[Value]] = {}
            for r in by_level[lvl]:
                groups.setdefault(r.tensor_arg().shape[-1], []).append(r)
            for w, reds in groups.items():
                self.loop(w, reds, [])
        widths = []
        for _, o in self.an.full_outputs:
            if o.shape[-1] not in widths:
                widths.append(o.shape[-1])
        for w in widths:
            self.loop(w, [], [(i, o) for i, o in self.an.full_outputs if o.shape[-1] == w])
        self.store_row_values()

    def loop(self, w: str, reds: list[Value], outs: list[tuple[int, Value]]) -> None:
        ncols = self.width(w)
        self.em.start_loop()
        col = Col("cols", "base", "mask")
        accs, online = [], []
        for r in reds:
            expr = self.em.emit(r.args[0], col, self.an.rank)[0]
            masked, identity = self.reduce_expr(r, expr, "mask")
            acc = f"{r.name}_acc"
            accs.append((r, acc, identity))
            partner = self.online.get(r.name)
            if partner is not None:  # running max and a sum of exponentials rescaled to it
                s_acc = f"{partner.name}_acc"
                online.append((r, partner, acc, s_acc))
                self.em.loop_lines += [
                    f"{r.name}_new = tl.maximum({acc}, {masked})",
                    f'{r.name}_safe = tl.where({r.name}_new == float("-inf"), 0.0, {r.name}_new)',
                    f"{s_acc} = {s_acc} * tl.exp({acc} - {r.name}_safe) + "
                    f"tl.where(mask, tl.exp({expr} - {r.name}_safe), 0.0)",
                    f"{acc} = {r.name}_new",
                ]
                continue
            if r.attrs["op"] in ARG_REDUCTIONS:  # per lane: the first best value seen and its column
                better = ">" if r.attrs["op"] == "argmax" else "<"
                self.em.loop_lines += [
                    f"{r.name}_x = {masked}",
                    f"{r.name}_take = ({r.name}_x {better} {acc}) | (({r.name}_x != {r.name}_x) & ({acc} == {acc}))",
                    f"{acc} = tl.where({r.name}_take, {r.name}_x, {acc})",
                    f"{acc}_col = tl.where({r.name}_take, cols, {acc}_col)",
                ]
            elif r.attrs["op"] in ("max", "min"):
                fn = "tl.maximum" if r.attrs["op"] == "max" else "tl.minimum"
                self.em.loop_lines.append(f"{acc} = {fn}({acc}, {masked})")
            else:
                self.em.loop_lines.append(f"{acc} += {masked}")
        self.store_outputs(col, outs)
        self.flush_row_lines()
        for r, acc, identity in accs:
            self.body.append(f"    {acc} = tl.full([BLOCK_ROWS, BLOCK_COLS], {identity}, dtype=tl.float32)")
            if r.attrs["op"] in ARG_REDUCTIONS:
                self.body.append(f"    {acc}_col = tl.zeros([BLOCK_ROWS, BLOCK_COLS], dtype=tl.int64)")
        for _m, _s, _acc, s_acc in online:
            self.body.append(f"    {s_acc} = tl.zeros([BLOCK_ROWS, BLOCK_COLS], dtype=tl.float32)")
        self.body.append(f"    for col_start in range({self.loop_range or f'0, {ncols}'}, BLOCK_COLS):")
        self.body.append("        cols = col_start + tl.arange(0, BLOCK_COLS)[None, :]")
        self.body.append(f"        mask = row_mask & (cols < {ncols})")
        self.body.extend("        " + line for line in self.em.loop_lines)
        for r, acc, _ in accs:
            var = f"{r.name}_row"
            if r.attrs["op"] in ARG_REDUCTIONS:
                self.body += ["    " + line for line in self.arg_lines(r, acc, f"{acc}_col", "row_mask")]
                self.em.finished[r.name] = var
                continue
            total = f"{self.combine(r)}({acc}, axis=1, keep_dims=True)"
            self.body.append(f"    {var} = {self.finish(r, total, ncols)}")
            self.em.finished[r.name] = var
        for m, s_red, acc, s_acc in online:
            self.body.append(f'    {m.name}_row_safe = tl.where({m.name}_row == float("-inf"), 0.0, {m.name}_row)')
            self.body.append(f"    {s_red.name}_row = tl.sum({s_acc} * tl.exp({acc} - {m.name}_row_safe), "
                             "axis=1, keep_dims=True)")
            self.em.finished[s_red.name] = f"{s_red.name}_row"

    def tile2d(self) -> None:
        if self.an.reductions or self.an.row_outputs or self.an.globals_:
            raise Unsupported("pointwise-tile2d needs a graph without reductions")
        if self.an.scans:
            raise Unsupported("pointwise-tile2d cannot carry a cumulative sum across column tiles")
        widths = {o.shape[-1] for _, o in self.an.full_outputs}
        if len(widths) != 1:
            raise Unsupported("pointwise-tile2d needs outputs of one width")
        ncols = self.width(widths.pop())
        # one grid axis (x allows 2**31 - 1 programs, y and z only 65535): the program id walks the column
        # blocks of a row block, then the next row block
        self.body.append("    pid = tl.program_id(0).to(tl.int64)")
        self.body.append(f"    n_col_blocks = tl.cdiv({ncols}, BLOCK_COLS)")
        self.prologue("(pid // n_col_blocks) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]")
        self.body.append("    cols = (pid % n_col_blocks) * BLOCK_COLS + tl.arange(0, BLOCK_COLS)[None, :]")
        self.body.append(f"    mask = row_mask & (cols < {ncols})")
        self.em.loop_lines = self.em.row_lines
        self.store_outputs(Col("cols", "base", "mask"), self.an.full_outputs)
        self.flush_row_lines()

    def matmul(self) -> None:
        mm = self.an.matmul
        # with row reductions in the epilogue (a router's softmax), one program holds whole rows of the product
        whole_rows = bool(self.an.reductions)
        if mm is None or mm.rank not in (2, 3) or self.an.globals_ or (self.an.row_outputs and not whole_rows):
            raise Unsupported("matmul-tiled needs one 2-D or batched matmul with a pointwise or row epilogue")
        a, b = mm.tensor_arg(0), mm.tensor_arg(1)
        batched = mm.rank == 3  # [BATCH, M, K] @ [BATCH, K, N]: one batch per group of programs
        d = 1 if batched else 0
        em = self.em
        m, n, k = em.scalar(a.shape[d], "M"), em.scalar(b.shape[d + 1], "N"), em.scalar(a.shape[d + 1], "K")
        em.scalar(f"{a.name}.stride({d})", "stride_am")
        em.scalar(f"{a.name}.stride({d + 1})", "stride_ak")
        em.scalar(f"{b.name}.stride({d})", "stride_bk")
        em.scalar(f"{b.name}.stride({d + 1})", "stride_bn")
        a_ptr, b_ptr = em.pointer(a.name), em.pointer(b.name)
        tiles = f"triton.cdiv({a.shape[d]}, BLOCK_M)" + ("" if whole_rows else
                                                           f" * triton.cdiv({b.shape[d + 1]}, BLOCK_N)")
        self.whole_row_width = b.shape[d + 1] if whole_rows else ""
        self.grid = f"(({a.shape[0]}) * {tiles},)" if batched else f"({tiles},)"
        self.body += [
            "    # grouped ordering: GROUP_M row-blocks share the same column blocks of B in L2",
            "    pid = tl.program_id(0)",
            f"    num_pid_m = tl.cdiv({m}, BLOCK_M)",
            f"    num_pid_n = tl.cdiv({n}, BLOCK_N)",
        ]
        if batched:
            em.scalar(f"{a.name}.stride(0)", "stride_ab")
            em.scalar(f"{b.name}.stride(0)", "stride_bb")
            self.body += [
                "    batch = (pid // (num_pid_m * num_pid_n)).to(tl.int64)",
                "    pid = pid % (num_pid_m * num_pid_n)",
                f"    {a_ptr} += batch * stride_ab",
                f"    {b_ptr} += batch * stride_bb",
            ]
        self.body += [
            "    num_pid_in_group = GROUP_M * num_pid_n",
            "    first_pid_m = (pid // num_pid_in_group) * GROUP_M",
            "    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)",
            "    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)",
            "    pid_n = (pid % num_pid_in_group) // group_size_m",
            "    m_rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]",
            "    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]",
            "    ks = tl.arange(0, BLOCK_K)",
            f"    row_mask = m_rows < {m}",
            f"    mask = row_mask & (cols < {n})",
            f"    a_tile = {a_ptr} + m_rows * stride_am + ks[None, :] * stride_ak",
            f"    b_tile = {b_ptr} + ks[:, None] * stride_bk + cols * stride_bn",
            "    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)",
            f"    for k_start in range(0, {k}, BLOCK_K):",
            f"        a = tl.load(a_tile, mask=row_mask & (ks[None, :] + k_start < {k}), other=0.0)",
            f"        b = tl.load(b_tile, mask=(ks[:, None] + k_start < {k}) & (cols < {n}), other=0.0)",
            *dot_lines(a.dtype, b.dtype),
            "        a_tile += BLOCK_K * stride_ak",
            "        b_tile += BLOCK_K * stride_bk",
            "    # epilogue on the fp32 accumulator; rows: the output rows' flat index",
            f"    rows = batch * {m} + m_rows" if batched else "    rows = m_rows",
        ]
        self.lead_indices()
        em.acc_var = "acc"
        em.loop_lines = em.row_lines
        if whole_rows:
            if len(self.an.widths) != 1:
                raise Unsupported("a matmul whose epilogue reduces rows of another width")
            self.whole_row_reductions({self.an.widths[0]: "mask"})
        self.store_outputs(Col("cols", "base", "mask"), self.an.full_outputs)
        if whole_rows:
            self.store_row_values()
        self.flush_row_lines()


    def conv(self) -> None:
        from kernelevo.search.offline.conv import conv_body

        conv_body(self)


def dot_lines(*dtypes: torch.dtype | None) -> list[str]:
    """``acc = tl.dot(a, b, acc)`` in the K loop; with bf16 tiles, widened to fp32 first on the CPU interpreter only
    (``DOT_F32``): it multiplies bf16 tiles as raw bits. fp32 products of bf16 values are exact."""
    import torch

    widen = ["        if DOT_F32:", "            a = a.to(tl.float32)", "            b = b.to(tl.float32)"]
    return (widen if torch.bfloat16 in dtypes else []) + ["        acc = tl.dot(a, b, acc)"]


def global_kernel_body(writer: KernelWriter, helpers: set[str]) -> tuple[list[str], Emitter]:
    """Second kernel for full reductions (e.g. the mean of per-row losses): one program."""
    em = Emitter(1, [], helpers)
    body = ["    offs = tl.arange(0, BLOCK)"]
    for name, g in writer.partials:
        op = g.attrs["op"]
        identity = {"sum": "0.0", "mean": "0.0", "max": 'float("-inf")', "min": 'float("inf")'}[op]
        body.append(f"    {name}_acc = tl.full([BLOCK], {identity}, dtype=tl.float32)")
    body.append("    for start in range(0, n_rows, BLOCK):")
    body.append("        idx = start + offs")
    for name, g in writer.partials:
        op = g.attrs["op"]
        em.pointer(name)
        other = {"sum": "0.0", "mean": "0.0", "max": 'float("-inf")', "min": 'float("inf")'}[op]
        load = f"tl.load({name}_ptr + idx, mask=idx < n_rows, other={other})"
        if op in ("sum", "mean"):
            body.append(f"        {name}_acc += {load}")
        else:
            fn = "tl.maximum" if op == "max" else "tl.minimum"
            body.append(f"        {name}_acc = {fn}({name}_acc, {load})")
    for name, g in writer.partials:
        combine = {"sum": "tl.sum", "mean": "tl.sum", "max": "tl.max", "min": "tl.min"}[g.attrs["op"]]
        total = f"{combine}({name}_acc, axis=0)"
        if g.attrs["op"] == "mean":
            total += " / n_rows"
        body.append(f"    {g.name}_total = {total}")
        em.finished[g.name] = f"{g.name}_total"
    em.loop_lines = em.row_lines
    for i, o in writer.an.global_outputs:
        expr = em.emit(o, NO_COL, 0)[0]
        ptr = em.pointer(f"out{i}")
        em.row_lines.append(f"tl.store({ptr}, {expr}.to({ptr}.dtype.element_ty))")
    body.extend("    " + line for line in em.row_lines)
    return body, em
