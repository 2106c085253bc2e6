"""Assemble a complete candidate module (kernels + ``ModelNew``) for one strategy."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from kernelevo.search.offline import split
from kernelevo.search.offline.emit import SCALAR_DIV, Emitter, kind_of
from kernelevo.search.offline.init_copy import Constructor, constructor
from kernelevo.search.offline.kernels import Analysis, KernelWriter, analyse, global_kernel_body
from kernelevo.search.offline.lower import Program, Unsupported, lower
from kernelevo.search.offline.trace import TracedTask

if TYPE_CHECKING:
    import torch

STRATEGIES = ("rowwise-1pass", "rowwise-looped", "rowwise-split", "pointwise-tile2d", "matmul-tiled",
              "conv-implicit-gemm")

# Launch parameters per strategy: module-level constants that the "tune" operator rewrites.
DEFAULTS = {
    "rowwise-1pass": {"ROW_TILE": 4096, "MIN_PROGRAMS": 256, "NUM_WARPS": 8, "MAX_ROW_COLS": 16384},
    "rowwise-looped": {"BLOCK_COLS": 2048, "ROW_BLOCK": 1, "NUM_WARPS": 8, "NUM_STAGES": 2},
    "rowwise-split": {"BLOCK_COLS": 2048, "SPLIT_TILE": 16384, "NUM_WARPS": 8, "NUM_STAGES": 2},
    "pointwise-tile2d": {"ROW_TILE": 4096, "MIN_PROGRAMS": 256, "MAX_BLOCK_COLS": 1024, "NUM_WARPS": 4},
    "matmul-tiled": {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "NUM_WARPS": 8,
                     "NUM_STAGES": 3},
    "conv-implicit-gemm": {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8, "NUM_WARPS": 4,
                           "NUM_STAGES": 3},
}

BROADCAST_STRIDES = '''
def broadcast_strides(t, rank):
    """Strides of ``t`` left-padded to ``rank`` dims, 0 where ``t`` broadcasts (size 1 or missing)."""
    pad = [0] * (rank - t.dim())
    return pad + [stride if size != 1 else 0 for size, stride in zip(t.shape, t.stride())]
'''


def applicable(an: Analysis, widest: int | None = None) -> list[str]:
    """Every strategy that can implement an analysed op, best guess first. Rows wider than
    ``MAX_ROW_COLS`` in the scored cases put the looped strategy first (rowwise-1pass would refuse them:
    the proposer's feasibility check then drops it, see :mod:`kernelevo.search.offline.launches`)."""
    if an.conv is not None:
        return ["conv-implicit-gemm"]
    if an.matmul is not None:
        return ["matmul-tiled"]
    wide = widest is not None and widest > DEFAULTS["rowwise-1pass"]["MAX_ROW_COLS"]
    if an.scans:  # a cumulative sum needs whole rows: in one tile, or in blocks with a carry
        return ["rowwise-looped", "rowwise-1pass"] if wide else ["rowwise-1pass", "rowwise-looped"]
    if an.reductions or an.row_outputs or an.globals_:  # very wide rows may also be split (split.py)
        return ["rowwise-looped", "rowwise-split", "rowwise-1pass"] if wide else ["rowwise-1pass", "rowwise-looped"]
    if wide:
        return ["pointwise-tile2d", "rowwise-looped", "rowwise-1pass"]
    return ["pointwise-tile2d", "rowwise-1pass", "rowwise-looped"]


def describe(prog: Program) -> str:
    ops = []
    for v in prog.values.values():
        if v.kind in ("pw", "reduce", "global", "pick", "cat", "shift", "cast", "matmul", "conv", "iota", "gather",
                      "bag", "window"):
            label = v.attrs.get("op", v.kind)
            if v.kind == "reduce":
                label = f"row-{label}"
            elif v.kind == "global":
                label = f"total-{label}"
            elif v.kind == "bag":
                label = f"bag-{label}"
            elif v.kind == "window":
                kh, kw = v.attrs["kernel"]
                label = f"{'avg' if label == 'mean' else label}-pool{kh}x{kw}"
            elif v.kind == "cast":
                label = f"to({str(v.dtype).replace('torch.', '')})"
            ops.append(label)
    return ", ".join(ops)


def _safe(name: str) -> str:
    return re.sub(r"\W", "_", name).strip("_").lower() or "op"


def _signature(names: list[str], constexprs: list[str]) -> str:
    params = names + [f"{c}: tl.constexpr" for c in constexprs]
    return ",\n    ".join(params)


def _rows_per_program(tiles: str) -> list[str]:
    """Launcher lines choosing ``block_rows``: up to ``ROW_TILE`` elements per program, but few enough rows that a
    small (decode) shape still launches about ``MIN_PROGRAMS`` programs, where one tile per program would leave
    most of the GPU's multiprocessors idle; both are tunable. ``tiles``: the programs one row per program would
    launch. A power of two (``tl.arange``)."""
    return ["        block_rows = max(1, min(ROW_TILE // block_cols, triton.next_power_of_2(n_rows),",
            f"                                triton.next_power_of_2(triton.cdiv({tiles}, MIN_PROGRAMS))))"]


def generate(traced: TracedTask, strategy: str, op_name: str, params: dict[str, int] | None = None) -> str:
    """Return the source of a candidate module implementing ``traced`` with ``strategy``."""
    prog = lower(traced)
    an = analyse(prog)
    fits = applicable(an, traced.widest_case_dim) if strategy == "rowwise-split" else applicable(an)
    if strategy not in fits:
        raise Unsupported(f"strategy {strategy} does not fit this op (fits: {', '.join(fits)})")
    knobs = dict(DEFAULTS[strategy])
    knobs.update(params or {})
    helpers: set[str] = set()
    w = KernelWriter(prog, an, strategy, helpers)
    finish: KernelWriter | None = None
    partials: list[split.Partial] = []
    if strategy == "rowwise-split":  # two kernels: partial results per chunk, then combine and write
        partials = split.partial_kernel(w)
        finish = KernelWriter(prog, an, strategy, helpers)
        split.finish_kernel(finish, partials)
    else:
        {"rowwise-1pass": w.one_pass, "rowwise-looped": w.looped, "pointwise-tile2d": w.tile2d,
         "matmul-tiled": w.matmul, "conv-implicit-gemm": w.conv}[strategy]()
    name = _safe(op_name)
    doc = (f'    """{op_name} ({strategy}): {describe(prog)}.\n\n'
           f"    Rows are positions in the leading dims, columns the last dim; math in fp32.\n"
           f'    """')
    ctor = constructor(traced.source) if traced.source else None
    src_parts = [_header(op_name, strategy, knobs), *(ctor.preamble if ctor else []), *sorted(helpers)]
    if w.em.strides or (finish is not None and finish.em.strides):
        src_parts.append(BROADCAST_STRIDES)
    if finish is None:
        src_parts.append(_kernel_text(f"{name}_kernel", w, strategy, doc))
    else:
        src_parts.append(_kernel_text(f"{name}_partial_kernel", w, strategy, doc))
        src_parts.append(_kernel_text(f"{name}_finish_kernel", finish, strategy,
                                      '    """Combine a row\'s partial results; write this chunk\'s outputs."""'))
    global_em, global_div = None, False
    if w.partials:
        gbody, global_em = global_kernel_body(w, helpers)
        gptrs = [f"{p}_ptr" for p in global_em.pointers]
        gscalars = list(global_em.scalars.values())
        global_div = any("div_by_scalar(" in line for line in gbody)
        gsig = _signature(gptrs + ["n_rows"] + gscalars, ["BLOCK"] + (["TORCH_CUDA"] if global_div else []))
        src_parts.append("\n".join(["@triton.jit", f"def {name}_total_kernel(\n    {gsig},\n):",
                                    '    """Combine the per-row partial results into the scalar outputs."""',
                                    *gbody]) + "\n")
    stage2 = (finish, partials) if finish is not None else None
    src_parts.append(_model(traced, prog, an, w, strategy, name, global_em, ctor, global_div, stage2))
    return "\n\n\n".join(p.strip("\n") for p in src_parts) + "\n"


def _kernel_text(kernel_name: str, w: KernelWriter, strategy: str, doc: str) -> str:
    """One ``@triton.jit`` function: the writer's body under a signature of the arguments it collected."""
    em = w.em
    stride_args = [arg for (_inp, _ctx), used in em.strides.items() for _d, arg in used]
    ptr_args = [f"{p}_ptr" for p in em.pointers]
    scalar_args = list(em.scalars.values())
    if strategy == "matmul-tiled":
        constexprs = ["BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"]
        head_args = ptr_args + scalar_args + stride_args
    elif strategy == "conv-implicit-gemm":
        constexprs = ["BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"]
        head_args = ptr_args + ["n_rows"] + scalar_args + stride_args
    elif strategy == "rowwise-split":
        constexprs = ["BLOCK_ROWS", "BLOCK_COLS", "SPLIT_COLS"]
        if any("BLOCK_SPLITS" in line for line in w.body):
            constexprs.append("BLOCK_SPLITS")
        head_args = ptr_args + ["n_rows", "n_splits"] + scalar_args + stride_args
    else:
        constexprs = ["BLOCK_ROWS", "BLOCK_COLS"]
        head_args = ptr_args + ["n_rows"] + scalar_args + stride_args
    if any("div_by_scalar(" in line or "if TORCH_CUDA:" in line for line in w.body):
        constexprs.append("TORCH_CUDA")
    if any("if DOT_F32:" in line for line in w.body):
        constexprs.append("DOT_F32")
    kernel = ["@triton.jit", f"def {kernel_name}(\n    {_signature(head_args, constexprs)},\n):", doc]
    return "\n".join(kernel + w.body) + "\n"


def _header(op_name: str, strategy: str, knobs: dict[str, int]) -> str:
    lines = [
        f'"""Offline KernelEvo candidate for {op_name}: strategy {strategy}.',
        "",
        "Generated from the op's traced ATen graph; launch parameters below are tunable.",
        '"""',
        "",
        "import torch",
        "import triton",
        "import triton.language as tl",
        "from torch import nn",
        "",
    ]
    lines += [f"{k} = {v}" for k, v in knobs.items()]
    return "\n".join(lines)


def _wrap_call(head: str, args: list[str], width: int = 100) -> list[str]:
    """A call with its arguments wrapped at ``width`` columns, continuation lines indented."""
    lines, current = [], head
    indent = " " * (len(head) - len(head.lstrip()) + 4)
    for i, arg in enumerate(args):
        piece = arg + (", " if i < len(args) - 1 else ")")
        if len(current) + len(piece) > width and current.strip() and not current.endswith("("):
            lines.append(current.rstrip())
            current = indent
        current += piece
    lines.append(current)
    return lines


def _init_lines(traced: TracedTask, ctor: Constructor | None) -> list[str]:
    """``__init__`` (and the helpers it calls): the reference's own constructor where it can be copied,
    else parameters of the traced shapes (the verifier loads the reference's values into them)."""
    if ctor is not None and ctor.has_init:
        return ["class ModelNew(nn.Module):", *"\n\n".join(ctor.methods).splitlines()]
    lines = ["class ModelNew(nn.Module):", f"    def __init__({traced.init_signature}):",
             "        super().__init__()"]
    if ctor is not None and not traced.param_names:  # no constructor to copy and nothing to create
        return lines
    made = set()
    for pname in traced.param_names:
        parts = pname.split(".")
        for depth in range(1, len(parts)):
            sub = ".".join(parts[:depth])
            if sub not in made:
                made.add(sub)
                lines.append(f"        self.{sub} = nn.Module()")
        shape = traced.param_shapes[pname]
        dtype = str(traced.param_dtypes[pname])
        owner = "self" + "".join(f".{p}" for p in parts[:-1])
        lines.append(f"        {owner}.{parts[-1]} = nn.Parameter(torch.zeros({tuple(shape)!r}, dtype={dtype}))")
    return lines


def _stride_values(w: KernelWriter, body: list[str]) -> list[str]:
    """The broadcast strides a kernel's inputs are read with (the forward computes them once per input)."""
    values = []
    for (inp, ctx), used in w.em.strides.items():
        var = f"{inp}_strides{ctx}"
        line = f"        {var} = broadcast_strides({inp}, {ctx})"
        if line not in body:
            body.append(line)
        values += [f"{var}[{d}]" for d, _ in used]
    return values


def _output_dtype(traced: TracedTask, prog: Program, o_dtype: torch.dtype | None) -> str:
    """The dtype of an output as the forward computes it: an input's dtype where the traced output had
    it (a bf16 call gives bf16 outputs, an fp32 call fp32; the forward's inputs before the parameters),
    else the traced dtype."""
    params = {p.replace(".", "_") for p in traced.param_names}
    if kind_of(o_dtype) == "f":
        for inp in sorted(prog.inputs, key=lambda v: v.attrs.get("root", v.name) in params):
            if inp.dtype == o_dtype and not inp.attrs.get("is_bool"):
                return f"{inp.name}.dtype"
    return str(o_dtype)


def _frozen_checks(traced: TracedTask) -> list[str]:
    """Lines refusing a call with another value of an attribute the kernel derived constants from in a way it
    cannot recompute (``trace.ScalarAttributes.frozen``): a wrong answer must not pass for this kernel's."""
    lines = []
    for access, value in traced.frozen_attrs.items():  # access: "self.name", checked by trace.attribute_access
        why = (f"this kernel was generated for {access.removeprefix('self.')}={value!r} and computes with "
               "constants derived from it: run kernelevo optimize for this configuration")
        lines += [f"        if float({access}) != {value!r}:", f"            raise ValueError({why!r})"]
    return lines


def _returned(prog: Program, i: int) -> str:
    """What the forward returns for output ``i``: the tensor the kernel wrote, or a view of it."""
    if i in prog.output_perms:
        return f"out{i}.permute({', '.join(map(str, prog.output_perms[i]))})"
    if i in prog.output_views:
        shape = prog.output_views[i]
        return f"out{i}.view({', '.join(shape)}{',' if len(shape) == 1 else ''})"
    return f"out{i}"


def _model(traced: TracedTask, prog: Program, an: Analysis, w: KernelWriter, strategy: str, name: str,
           global_em: Emitter | None, ctor: Constructor | None = None, global_div: bool = False,
           stage2: tuple[KernelWriter, list[split.Partial]] | None = None) -> str:
    lines = _init_lines(traced, ctor)
    lines.append("")
    lines.append(f"    def forward({traced.forward_signature}):")
    body = _frozen_checks(traced) + ["        " + line for line in prog.host_lines]
    first = prog.inputs[len(traced.param_names)].name if len(prog.inputs) > len(traced.param_names) else \
        prog.inputs[0].name
    lead = an.lead
    body.append(f"        n_rows = {' * '.join('(' + d + ')' for d in lead) if lead else '1'}")
    for i, o in enumerate(prog.outputs):
        out_shape = ", ".join(o.shape) + ("," if len(o.shape) == 1 else "")
        body.append(f"        out{i} = torch.empty(({out_shape}), device={first}.device, "
                    f"dtype={_output_dtype(traced, prog, o.dtype)})")
    for pname, _g in w.partials:
        body.append(f"        {pname} = torch.empty((n_rows,), device={first}.device, dtype=torch.float32)")
    stride_vals = _stride_values(w, body)
    args = list(w.em.pointers)
    scalars = list(w.em.scalars.keys())
    int_out = any(kind_of(o.dtype) != "f" for o in prog.outputs)
    if stage2 is not None:  # rowwise-split: two kernels, each with its own arguments
        finish, partials = stage2
        widths = [f"({x})" for x in an.widths]

        def extra(writer: KernelWriter) -> list[str]:
            flags = [f"TORCH_CUDA={first}.is_cuda"] if any("div_by_scalar(" in line for line in writer.body) else []
            return flags + (["enable_fp_fusion=False"] if int_out else [])

        finish_strides = _stride_values(finish, body)
        body += split.launch_lines(name, partials, first, widths[0],
                                   (args + ["n_rows", "n_splits"] + scalars + stride_vals, extra(w)),
                                   (list(finish.em.pointers) + ["n_rows", "n_splits"] + list(finish.em.scalars)
                                    + finish_strides, extra(finish)))
        launch, consts = [], []
    elif strategy in ("matmul-tiled", "conv-implicit-gemm"):
        block_n = "BLOCK_N"
        if w.whole_row_width:  # the epilogue reduces rows: one column tile covers all of them
            block_n = "block_n"
            body.append(f"        block_n = max(16, triton.next_power_of_2({w.whole_row_width}))")
            body.append("        if block_n > BLOCK_N:  # the row epilogue needs whole rows of the product in one tile")
            body.append('            raise ValueError(f"rows of {block_n} columns are wider than BLOCK_N={BLOCK_N}"')
            body.append('                             " for a matmul whose epilogue reduces its rows")')
        body.append(f"        grid = {w.grid}")
        launch = args + (["n_rows"] if strategy == "conv-implicit-gemm" else []) + scalars + stride_vals
        consts = ["BLOCK_M=BLOCK_M", f"BLOCK_N={block_n}", "BLOCK_K=BLOCK_K", "GROUP_M=GROUP_M",
                  "num_warps=NUM_WARPS", "num_stages=NUM_STAGES"]
        if any("if DOT_F32:" in line for line in w.body):  # on the CPU interpreter only: see kernels.dot_lines
            consts.append(f"DOT_F32=not {first}.is_cuda")
    else:
        launch = args + ["n_rows"] + scalars + stride_vals
        widths = [f"({x})" for x in an.widths] or ["1"]
        widest = widths[0] if len(widths) == 1 else f"max({', '.join(widths)})"
        if strategy == "rowwise-1pass":
            body.append(f"        block_cols = triton.next_power_of_2({widest})")
            body.append("        if block_cols > MAX_ROW_COLS:  # a whole row must fit in registers")
            body.append('            raise ValueError(f"rows of {block_cols} columns are too wide for rowwise-1pass; "')
            body.append('                             "the rowwise-looped strategy handles them")')
            body += _rows_per_program("n_rows")
            body.append("        grid = (triton.cdiv(n_rows, block_rows),)")
        elif strategy == "rowwise-looped":
            body.append("        block_cols, block_rows = BLOCK_COLS, ROW_BLOCK")
            body.append("        grid = (triton.cdiv(n_rows, block_rows),)")
        else:
            body.append(f"        block_cols = min(MAX_BLOCK_COLS, triton.next_power_of_2({widest}))")
            body.append(f"        col_blocks = triton.cdiv({widest}, block_cols)")
            body += _rows_per_program("n_rows * col_blocks")
            body.append("        # one grid axis: x allows 2**31 - 1 programs where y and z allow 65535")
            body.append("        grid = (triton.cdiv(n_rows, block_rows) * col_blocks,)")
        consts = ["BLOCK_ROWS=block_rows", "BLOCK_COLS=block_cols", "num_warps=NUM_WARPS"]
        if strategy == "rowwise-looped":  # the column loop is software-pipelined
            consts.append("num_stages=NUM_STAGES")
    if stage2 is None:
        # divisions by Python numbers round as PyTorch rounds them on this device
        if (SCALAR_DIV in w.em.helpers and any("div_by_scalar(" in line for line in w.body)) or any(
                "if TORCH_CUDA:" in line for line in w.body):  # or sums accumulated like PyTorch's (emit.scan)
            consts.append(f"TORCH_CUDA={first}.is_cuda")
        if int_out:  # integer outputs compare exactly: no fused multiply-adds where PyTorch rounds each operation
            consts.append("enable_fp_fusion=False")
        body += _wrap_call(f"        {name}_kernel[grid](", launch + consts)
    if global_em is not None:
        gargs = list(global_em.pointers) + ["n_rows"] + list(global_em.scalars.keys()) + ["BLOCK=1024"]
        if global_div:
            gargs.append(f"TORCH_CUDA={first}.is_cuda")
        body += _wrap_call(f"        {name}_total_kernel[(1,)](", gargs)
    outs = [_returned(prog, i) for i in range(len(prog.outputs))]
    if prog.returns_tuple:
        body.append(f"        return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
    else:
        body.append(f"        return {outs[0]}")
    return "\n".join(lines + body) + "\n"
