"""Turn IR lane values into Triton expressions, one variable per value.

Every kernel the offline proposer writes works on a 2-D tile: ``rows`` is a ``[BLOCK_ROWS, 1]``
column of row indices (a row is one position in the leading dimensions) and ``cols`` a
``[1, BLOCK_COLS]`` (or row-dependent) set of positions along the last dimension. A value is
emitted *at* a column expression, so concatenation, slicing and gathers along the last dimension
are just different column expressions. Arithmetic is done in fp32; explicit casts to fp16/bf16 in
the reference round only at the final store (the verifier compares with an fp32/fp64 reference).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernelevo.search.offline.ir import Operand, appends_ones, rows_free
from kernelevo.search.offline.lower import Unsupported, Value

if TYPE_CHECKING:
    import torch

TL_DTYPES = {
    "torch.float16": "tl.float16", "torch.bfloat16": "tl.bfloat16", "torch.float32": "tl.float32",
    "torch.int8": "tl.int8", "torch.uint8": "tl.uint8", "torch.int16": "tl.int16",
    "torch.int32": "tl.int32", "torch.int64": "tl.int64", "torch.bool": "tl.int1",
}

ROUND_HALF_EVEN = '''
@triton.jit
def round_half_even(x):
    """Round to the nearest integer, ties to even (torch.round), without libdevice."""
    floor_x = tl.floor(x)
    frac = x - floor_x
    floor_is_odd = floor_x - 2.0 * tl.floor(floor_x * 0.5)
    tie = tl.where(floor_is_odd > 0.5, floor_x + 1.0, floor_x)
    return tl.where(frac > 0.5, floor_x + 1.0, tl.where(frac < 0.5, floor_x, tie))
'''


SCALAR_DIV = '''
@triton.jit
def div_by_scalar(x, d, TORCH_CUDA: tl.constexpr):
    """``x / d`` for a Python number ``d``, rounded as PyTorch rounds it: on CUDA it multiplies by the
    fp32 reciprocal of ``d`` (one rounding more), on the CPU it divides (IEEE)."""
    if TORCH_CUDA:
        return x * tl.math.div_rn(1.0, d)
    else:
        return tl.math.div_rn(x, d)
'''


def kind_of(dtype: torch.dtype | None) -> str:
    """'f' for floating dtypes, 'b' for bool, 'i' for integers."""
    if dtype is None:
        return "f"
    if dtype.is_floating_point:
        return "f"
    return "b" if str(dtype) == "torch.bool" else "i"


_SHORT = {"torch.float32": "f32", "torch.float16": "f16", "torch.bfloat16": "bf16", "torch.int8": "i8",
          "torch.int32": "i32", "torch.int64": "i64", "torch.bool": "bool", "torch.uint8": "u8"}


def var_base(v: Value) -> str:
    """A readable stem for the variable holding ``v`` ("gelu", "as_f32", "x", "picked")."""
    if v.kind == "cast":
        return "as_" + _SHORT.get(str(v.dtype), "t")
    if v.kind == "pw":
        return v.attrs.get("op", "val")
    if v.kind == "pick":
        return "picked"
    if v.kind == "input":
        return v.name
    stem = re.sub(r"(_\d+)+$", "", re.sub(r"\W+", "_", v.name)).strip("_")
    return stem or v.kind


@dataclass(frozen=True)
class Col:
    """A column expression: ``var`` is its Triton name; ``kind`` is base|shifted|row|none."""

    var: str
    kind: str
    mask: str = "mask"


NO_COL = Col("", "none")


class Emitter:
    """Emits lane values into lists of source lines, memoised per (value, column, context)."""

    def __init__(self, rank: int, lead: list[str], helpers: set[str]):
        self.rank = rank  # domain rank R: leading dims are rank-1, the last is the column
        self.lead = lead
        self.scalars: dict[str, str] = {}  # host expression -> kernel argument name
        self.strides: dict[tuple[str, int], list[tuple[int, str]]] = {}  # (input, ctx) -> [(dim, arg)]
        self.pointers: list[str] = []
        self.row_lines: list[str] = []
        self.loop_lines: list[str] = []
        # (value name, column variable or "" per row, context rank) -> (expression, scope, kind), see emit
        self.memo_row: dict[tuple[str, str, int], tuple[str, str, str]] = {}
        self.memo_loop: dict[tuple[str, str, int], tuple[str, str, str]] = {}
        self.finished: dict[str, str] = {}  # reduction value name -> variable of its result
        self.helpers = helpers
        self.acc_var = ""  # name of the matmul accumulator, when there is one
        # a mask over the columns only ([1, BLOCK_COLS]): where set, inputs that vary along the last dimension only
        # (a per-channel scale) are loaded once per column, not once per element of the tile
        self.col_mask = ""
        # a predicate over the tile where the value being emitted is used at all (the chosen branch of a
        # ``where``): column loads under it are masked by it, so the lanes a mask discards are never read
        self.guard = ""
        # the columns come in blocks, one loop iteration each (rowwise-looped): a cumulative sum carries the
        # row's total so far from one block to the next
        self.blocked = False
        self.scalar_rows: set[str] = set()  # row pointers with no per-row offset (see row_pointer)
        self._n = 0

    # -- bookkeeping -------------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        self._n += 1
        return f"{base}{self._n}"

    def scalar(self, host_expr: str, hint: str) -> str:
        """A host integer/float passed to the kernel as an argument (deduplicated by expression)."""
        if host_expr not in self.scalars:
            name = hint
            while name in self.scalars.values():
                name = self.fresh(hint + "_")
            self.scalars[host_expr] = name
        return self.scalars[host_expr]

    def pointer(self, name: str) -> str:
        if name not in self.pointers:
            self.pointers.append(name)
        return f"{name}_ptr"

    def start_loop(self) -> None:
        self.loop_lines = []
        self.memo_loop = {}

    def _put(self, scope: str, line: str) -> None:
        (self.row_lines if scope == "row" else self.loop_lines).append(line)

    # -- loads -------------------------------------------------------------------------------
    def row_pointer(self, inp: Value, ctx: int) -> str:
        """``<input>_row``: pointer to where each row of the tile starts in ``inp`` (context rank ctx)."""
        key = (inp.name, ctx)
        var = f"{inp.name}_row" if ctx == self.rank else f"{inp.name}_at_row"
        if key in self.strides:
            return var
        pad = ctx - inp.rank
        if pad < 0:
            raise Unsupported(f"input {inp.name} has more dimensions than the op's domain")
        shape = ["1"] * pad + list(inp.shape)
        used: list[tuple[int, str]] = []
        terms = []
        n_lead = ctx if ctx < self.rank else ctx - 1
        for d in range(ctx):
            if shape[d] == "1":
                continue
            suffix = "" if ctx == self.rank else "r"
            arg = f"{inp.name}_{suffix}stride{d}"
            used.append((d, arg))
            if d < n_lead:
                terms.append(f"i{d} * {arg}")
        self.strides[key] = used
        if not terms:  # one element for every row (a 0-d tensor, a learnable scalar): a scalar pointer
            self.scalar_rows.add(var)
        offset = " + ".join(terms) if terms else "0"
        self.row_lines.append(f"{var} = {self.pointer(inp.name)} + {offset}")
        return var

    def load(self, inp: Value, col: Col, ctx: int) -> tuple[str, str, str]:
        row = self.row_pointer(inp, ctx)
        kind = kind_of(inp.dtype)
        if inp.attrs.get("is_bool"):
            kind = "b"
        col_dep = ctx == self.rank and (["1"] * (ctx - inp.rank) + list(inp.shape))[-1] != "1"
        if col_dep and col.kind == "none":
            raise Unsupported(f"{inp.name} is read per column where the op is per row")
        if col_dep:
            stride = dict(self.strides[(inp.name, ctx)])[ctx - 1]
            at = col.var
            if inp.attrs.get("col_div"):  # sized like the first of several merged dims (moves.merge_reduced_dims)
                at = f"({col.var} // {self.scalar(inp.attrs['col_div'], f'{inp.name}_div')})"
            addr = f"{row} + {at} * {stride}"
            if col.kind == "base":
                per_column = all(d == ctx - 1 for d, _ in self.strides[(inp.name, ctx)])
                mask = self.col_mask if self.col_mask and per_column else col.mask
            else:
                width = self.scalar(inp.shape[-1], f"{inp.name}_ncols")
                mask = f"row_mask & ({col.var} >= 0) & ({col.var} < {width})"
            scope = "row" if col.kind == "row" else "loop"
            if self.guard and col.kind != "row":
                mask = f"{mask} & {self.guard}"
        else:
            addr, mask, scope = row, "row_mask", "row"
        if not col_dep and row in self.scalar_rows:  # the tensor's one element, broadcast (it always exists)
            expr = f"tl.load({addr})"
        else:
            expr = f"tl.load({addr}, mask={mask}, other=0)"
        if kind == "f":
            expr += ".to(tl.float32)"
        elif kind == "b":
            expr = f"({expr} != 0)"
        return expr, scope, kind

    # -- values ------------------------------------------------------------------------------
    def emit(self, v: Operand, col: Col, ctx: int) -> tuple[str, str, str]:
        """Return (expression or variable, scope 'row'|'loop', kind 'f'|'i'|'b') of ``v``."""
        if not isinstance(v, Value):
            return self.literal(v), "row", "f" if isinstance(v, float) else ("b" if isinstance(v, bool) else "i")
        key = (v.name, f"{col.var}|{self.guard}" if self.guard else col.var, ctx)
        for memo in (self.memo_row, self.memo_loop):
            for k in (key, (v.name, "", ctx)):  # per-row values are the same at every column
                if k in memo:
                    return memo[k]
        result = self._emit(v, col, ctx)
        expr, scope, kind = result
        if v.kind not in ("const", "hostfloat") and not expr.isidentifier():
            var = self.fresh(var_base(v) + "_")
            self._put(scope, f"{var} = {expr}")
            result = (var, scope, kind)
        (self.memo_row if result[1] == "row" else self.memo_loop)[key] = result
        if result[1] == "row" and col.kind != "row":
            self.memo_row[(v.name, "", ctx)] = result
        return result

    def literal(self, x: object) -> str:
        if isinstance(x, bool):
            return "True" if x else "False"
        if isinstance(x, float):
            if x != x:
                return 'float("nan")'
            if x in (float("inf"), float("-inf")):
                return 'float("inf")' if x > 0 else 'float("-inf")'
            return repr(x)
        return str(x)

    def _emit(self, v: Value, col: Col, ctx: int) -> tuple[str, str, str]:
        if v.kind == "const":
            return self.literal(v.args[0]), "row", kind_of(v.dtype)
        if v.kind == "hostfloat":
            return self.scalar(v.attrs["expr"], v.name), "row", "f"
        if v.kind == "input":
            return self.load(v, col, ctx)
        if v.kind in ("reduce", "global"):
            if v.name not in self.finished:
                raise Unsupported(f"{v.name} is used before its reduction is complete")
            self._check_row_value(v, ctx)
            return self.finished[v.name], "row", "f"
        if v.kind in ("matmul", "conv"):
            if col.kind != "base" or not self.acc_var:
                raise Unsupported(f"the {v.kind} result may only feed a pointwise epilogue")
            return self.acc_var, "loop", "f"
        if v.kind == "cast":
            return self.cast(v, col, ctx)
        if v.kind == "pw":
            from kernelevo.search.offline.ops import pointwise

            if v.attrs.get("op") == "where" and len(v.args) == 3:
                ops = self._where_operands(v, col, ctx)
            else:
                ops = [self.emit(a, col, ctx) for a in v.args]
            scope = "loop" if any(o[1] == "loop" for o in ops) else "row"
            expr, kind = pointwise(v, ops, self.helpers)
            return expr, scope, kind
        if v.kind == "reshape":
            src = v.tensor_arg()
            if src.rank == v.rank or (rows_free(src) and src.shape[-1] == v.shape[-1]):
                # a matmul's [B*H, M, N] (or its epilogue) viewed as [B, H, M, N]: the same rows, numbered alike
                return self.emit(src, col, ctx)
            if appends_ones(v.shape, src.shape):  # [N, C] as [N, C, 1, 1]: a value per row
                return self.emit(src, NO_COL, ctx - (v.rank - src.rank))
            if v.rank == src.rank - 1 and src.shape[-1] == "1":
                return self.emit(src, NO_COL, ctx + 1)
            if v.rank == 0:
                return self.emit(src, col, ctx)
            raise Unsupported(f"reshape of a computed tensor from rank {src.rank} to {v.rank}")
        if v.kind == "scan":
            return self.scan(v, col, ctx)
        if v.kind == "shift":
            start = self.scalar(v.attrs["start"], f"{v.name}_start")
            if v.shape[-1] == "1":  # one column of the source (``y[..., 1:2]``), the same for the whole row
                return self.emit(v.args[0], self.new_col(f"rows * 0 + {start}", Col("", "row")), ctx)
            if col.kind == "none":
                raise Unsupported("a slice used per row")
            shifted = self.new_col(f"{col.var} + {start}", col)
            return self.emit(v.args[0], shifted, ctx)
        if v.kind == "cat":
            if col.kind == "none":
                raise Unsupported("a concatenation used per row")
            parts, offset, host_offset, branches = v.args, "0", "", []
            for i, part in enumerate(parts):
                # every part gets its own column variable, so its loads are masked to its own width
                # (the first part too: reading past its width would read past the input's end)
                pcol = self.new_col(col.var if i == 0 else f"{col.var} - {offset}", col)
                branches.append((offset, self.emit(part, pcol, ctx)))
                width = v.attrs["widths"][i]
                host_offset = f"({width})" if not host_offset else f"{host_offset} + ({width})"
                offset = self.scalar(host_offset, f"{v.name}_offset{i + 1}")
            expr = branches[-1][1][0]
            for i in range(len(parts) - 2, -1, -1):
                bound = branches[i + 1][0]
                expr = f"tl.where({col.var} < {bound}, {branches[i][1][0]}, {expr})"
            scope = "loop" if col.kind != "row" else "row"
            return expr, scope, "f" if kind_of(v.dtype) == "f" else kind_of(v.dtype)
        if v.kind == "window":
            from kernelevo.search.offline.window import window

            return window(self, v, col, ctx)
        if v.kind in ("iota", "gather", "bag"):
            from kernelevo.search.offline import emit_index

            return {"iota": emit_index.iota, "gather": emit_index.gather, "bag": emit_index.bag}[v.kind](
                self, v, col, ctx)
        if v.kind == "pick":
            src, index = v.tensor_arg(0), v.tensor_arg(1)
            idx, _, _ = self.emit(index, NO_COL if index.rank == self.rank else col, ctx)
            self._check_row_value(v, ctx)
            return self.emit(src, Col(idx, "row"), self.rank)[0], "row", kind_of(v.dtype)
        raise Unsupported(f"value kind {v.kind}")

    def _where_operands(self, v: Value, col: Col, ctx: int) -> list[tuple[str, str, str]]:
        """``where(cond, a, b)`` with one branch a constant (a causal mask's ``-inf``): the other branch is emitted
        under the guard that selects it, so its loads skip the lanes the constant replaces."""
        cond, a, b = v.args
        c = self.emit(cond, col, ctx)

        def varies(x: Operand) -> bool:
            return isinstance(x, Value) and x.kind not in ("const", "hostfloat")

        if varies(a) == varies(b):
            return [c, self.emit(a, col, ctx), self.emit(b, col, ctx)]
        pred = c[0] if c[2] == "b" else f"({c[0]} != 0)"
        guard = pred if varies(a) else f"({pred} == 0)"
        outer = self.guard
        self.guard = f"{outer} & {guard}" if outer else guard
        try:
            chosen = self.emit(a if varies(a) else b, col, ctx)
        finally:
            self.guard = outer
        other = self.emit(b if varies(a) else a, col, ctx)
        return [c, chosen, other] if varies(a) else [c, other, chosen]

    def _check_row_value(self, v: Value, ctx: int) -> None:
        per_row = (v.rank == self.rank and (v.shape[-1:] == ("1",))) or v.rank == self.rank - 1 or v.rank == 0
        if not per_row:
            raise Unsupported(f"{v.name} is a per-row value used as a per-column one")
        if v.rank == self.rank - 1 and ctx == self.rank and v.kind != "global":
            raise Unsupported(f"{v.name} (reduced without keepdim) broadcast along the last dimension")

    def new_col(self, expr: str, base: Col) -> Col:
        var = self.fresh("cols_")
        self._put("row" if base.kind == "row" else "loop", f"{var} = {expr}")
        return Col(var, "row" if base.kind == "row" else "shifted", base.mask)

    def scan(self, v: Value, col: Col, ctx: int) -> tuple[str, str, str]:
        """A cumulative sum along the row: ``tl.cumsum`` over the tile's columns (padding counts as 0), plus, where
        the columns come in blocks, the sum of the blocks before (the carry, zero before the loop)."""
        if col.kind != "base":
            raise Unsupported("a cumulative sum read per row or at shifted columns")
        expr, _, kind = self.emit(v.tensor_arg(), col, ctx)
        masked = self.fresh(f"{v.name}_in")
        # torch sums integers and bools as int64, floats in float32 on CUDA and in float64 on the CPU
        types = ["tl.int64"] if kind_of(v.dtype) != "f" else ["tl.float32", "tl.float64"]

        def per_device(scope: str, line: str) -> None:  # ``line`` with {t}: the accumulator type on this device
            if len(types) == 1:
                self._put(scope, line.format(t=types[0]))
                return
            for head, t in (("if TORCH_CUDA:", types[0]), ("else:", types[1])):
                self._put(scope, head)
                self._put(scope, "    " + line.format(t=t))

        per_device("loop", f"{masked} = tl.where({col.mask}, {expr}, 0).to({{t}})")
        as_lane = ".to(tl.float32)" if len(types) > 1 else ""  # float lanes are float32 from here on
        if not self.blocked:
            return f"tl.cumsum({masked}, axis=1){as_lane}", "loop", kind_of(v.dtype)
        carry, out = self.fresh(f"{v.name}_carry"), self.fresh(f"{v.name}_scan")
        per_device("row", f"{carry} = tl.zeros([BLOCK_ROWS, 1], dtype={{t}})")
        self._put("loop", f"{out} = (tl.cumsum({masked}, axis=1) + {carry}){as_lane}")
        self._put("loop", f"{carry} += tl.sum({masked}, axis=1, keep_dims=True)")
        return out, "loop", kind_of(v.dtype)

    def cast(self, v: Value, col: Col, ctx: int) -> tuple[str, str, str]:
        expr, scope, kind = self.emit(v.args[0], col, ctx)
        target = kind_of(v.dtype)
        tl_type = TL_DTYPES.get(str(v.dtype))
        if tl_type is None:
            raise Unsupported(f"cast to {v.dtype}")
        if target == "f":
            if kind != "f":
                expr = f"{expr}.to(tl.float32)"
            # Casts to fp16/bf16 are not rounded here: the math stays in fp32 up to the final store,
            # which is what the verifier's fp32/fp64 reference measures against.
            return expr, scope, "f"
        if target == "b":
            return f"({expr} != 0)", scope, "b"
        return f"{expr}.to({tl_type})", scope, "i"
