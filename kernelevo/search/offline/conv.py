"""Convolution as an implicit GEMM, with batch norm (eval mode) and pointwise ops fused as its epilogue.

``aten.convolution`` of a 2-D input is a GEMM whose rows are output positions (M = N*P*Q), whose columns are
output channels (K) and whose reduction runs over the filter taps and input channels (C*R*S). The kernel
computes the im2col address of every element of its input tile itself (nothing is unfolded in memory),
masks the padding, and accumulates in fp32 with ``tl.dot``. Batch norm in eval mode becomes per-channel
pointwise ops on the accumulator that read the module's buffers (running mean and variance, weight, bias)
at call time, so the scale and shift are never baked in: a ``ModelNew`` stays drop-in when the buffers
change. The epilogue works on the output in channels-last order (``[N, P, Q, K]``, returned as a permuted
NCHW view, the layout PyTorch gives a channels-last convolution), so a program's columns are channels.

Lowered: 2-D convolutions with groups 1, dilation 1, no transposition, any stride and padding, of an input of
the op (or a view of it) by a parameter. :func:`node_problem` says why any other is not (the unsupported-op
report uses it before any baseline is measured).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernelevo.search.offline.ir import Program, Unsupported, Value
from kernelevo.search.offline.moves import view_moved

if TYPE_CHECKING:
    from kernelevo.search.offline.kernels import KernelWriter
    from kernelevo.search.offline.lower import Lowering

CONV_OPS = {"convolution"}
# eval-mode batch norm as make_fx records it (the first takes no ``training`` flag)
BATCH_NORM_OPS = {"_native_batch_norm_legit_no_training", "_native_batch_norm_legit", "native_batch_norm"}
CHANNELS_LAST = [0, 2, 3, 1]  # NCHW -> NHWC
TO_NCHW = [0, 3, 1, 2]
_EPILOGUE_KINDS = ("input", "const", "hostfloat", "pw", "cast")


def conv_problem(x_rank: int, stride: Any, padding: Any, dilation: Any, transposed: Any, output_padding: Any,
                 groups: Any) -> str | None:
    """Why a convolution with these arguments is not lowered (None: it is). Pure."""
    numbers = [*stride, *padding, *dilation, *output_padding, groups]
    if x_rank != 4:
        return f"a {x_rank - 2}-D convolution: only 2-D convolutions (an NCHW input) are lowered"
    if not all(type(n) is int for n in numbers):
        return "stride, padding or groups that are not plain numbers"
    if transposed:
        return "a transposed convolution is not lowered"
    if groups != 1:
        return f"groups={groups}: only groups=1 is lowered (grouped and depthwise convolutions are not)"
    if any(d != 1 for d in dilation):
        return f"dilation {tuple(dilation)}: only dilation 1 is lowered"
    if any(o != 0 for o in output_padding):
        return f"output padding {tuple(output_padding)} is not lowered"
    if len(stride) != 2 or len(padding) != 2 or min(stride) < 1 or min(padding) < 0:
        return f"stride {tuple(stride)} / padding {tuple(padding)}: two positive strides and paddings are lowered"
    return None


def batch_norm_problem(name: str, args: list[Any] | tuple[Any, ...]) -> str | None:
    """Why a batch-norm call is not lowered (None: eval mode with running statistics, which is)."""
    if name == "_native_batch_norm_legit_no_training":
        return None
    if len(args) < 8:  # the no_stats overload: no running statistics
        return "batch norm without running statistics (track_running_stats=False) is not lowered"
    if args[5]:
        return ("batch norm in training mode (statistics of the batch) is not lowered: the verifier and a deployed "
                "model run it in eval mode, with the running statistics")
    return None


def _op_name(target: Any) -> str:
    overload = getattr(target, "_overloadpacket", None)
    name = overload.__name__ if overload is not None else getattr(target, "__name__", str(target))
    return name.split(".")[0]


def node_problem(node: Any) -> str | None:
    """Why a traced call of an op this module handles is still not lowered (None: it is, or not this module's).
    Reads the graph only."""
    name = _op_name(node.target)
    if name in CONV_OPS:
        x = node.args[0]
        rank = x.meta["val"].dim() if hasattr(x, "meta") and "val" in x.meta else 0
        return conv_problem(rank, *node.args[3:9])
    if name in BATCH_NORM_OPS:
        return batch_norm_problem(name, node.args)
    return None


# -- lowering ---------------------------------------------------------------------------------------
def per_channel(lowering: Lowering, p: Any, rank: int, what: str) -> Value:
    """A ``[K]`` parameter viewed as ``[K, 1, 1]`` (by the forward), to broadcast over an NCHW tensor."""
    if not isinstance(p, Value) or p.kind != "input" or p.rank != 1:
        raise Unsupported(f"a {what} that is not a 1-D input or parameter of the op")
    root = p.attrs.get("root", p.name)
    name = lowering._fresh(f"{root}_per_channel")
    lowering.host_lines.append(f"{name} = {p.name}.reshape([-1{', 1' * (rank - 2)}])")
    v = Value(name, "input", (), rank - 1, (p.shape[0],) + ("1",) * (rank - 2), p.dtype,
              {"is_bool": False, "root": root})
    lowering.values[name] = v
    lowering.inputs.append(v)
    return v


def lower_convolution(lowering: Lowering, node: Any, args: list[Any]) -> Value:
    """``convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups)``."""
    x, weight, bias = args[0], args[1], args[2]
    rank = x.rank if isinstance(x, Value) else 0
    problem = conv_problem(rank, *args[3:9])
    if problem is not None:
        raise Unsupported(f"aten.convolution: {problem}")
    for operand, what in ((x, "input"), (weight, "weight")):
        if not isinstance(operand, Value) or operand.kind != "input":
            raise Unsupported(f"aten.convolution of a computed {what} (only inputs of the op, parameters and their "
                              "views are lowered)")
    if x.dtype != weight.dtype:
        raise Unsupported(f"aten.convolution of a {x.dtype} input by a {weight.dtype} weight")
    conv = lowering._new(node, "conv", (x, weight), stride=list(args[3]), padding=list(args[4]))
    if bias is None:
        return conv
    conv.name = f"{node.name}_conv"
    lowering.values[conv.name] = conv
    return lowering._new(node, "pw", (conv, per_channel(lowering, bias, rank, "convolution bias")), op="add",
                         kwargs={})


def lower_batch_norm(lowering: Lowering, node: Any, name: str, args: list[Any]) -> list[Value]:
    """Eval-mode batch norm, as PyTorch's decomposition computes it: ``(x - mean) * rsqrt(var + eps) * weight
    + bias`` with per-channel operands read from the module at call time. Returns the three outputs of the ATen
    op; the saved statistics (outputs 1 and 2) are empty in eval mode and never read."""
    problem = batch_norm_problem(name, args)
    if problem is not None:
        raise Unsupported(f"aten.{name}: {problem}")
    x, weight, bias, mean, var, eps = *args[:5], args[-1]
    if not isinstance(x, Value) or x.rank < 2:
        raise Unsupported(f"aten.{name} of something other than a tensor of rank 2 or more")

    def pw(op: str, operands: tuple[Any, ...], like: Value) -> Value:
        v = Value(lowering._fresh(f"{node.name}_{op}"), "pw", operands, like.rank, like.shape, x.dtype,
                  {"op": op, "kwargs": {}})
        lowering.values[v.name] = v
        return v

    def channel(p: Any, what: str) -> Value:
        return per_channel(lowering, p, x.rank, f"batch-norm {what}")

    var_c = channel(var, "running variance")
    inv_std = pw("rsqrt", (pw("add", (var_c, eps), var_c),), var_c)
    out = pw("mul", (pw("sub", (x, channel(mean, "running mean")), x), inv_std), x)
    if weight is not None:
        out = pw("mul", (out, channel(weight, "weight")), x)
    if bias is not None:
        out = pw("add", (out, channel(bias, "bias")), x)
    return [out, out, out]


def output_sizes(conv: Value) -> tuple[str, ...]:
    """``[N, K, P, Q]`` of a convolution as host expressions of its operands' own shapes, as PyTorch computes them
    (the same sizes as the trace's symbolic ones, written from the operands the kernel reads)."""
    x, w = conv.tensor_arg(0).name, conv.tensor_arg(1).name
    (sh, sw), (ph, pw) = conv.attrs["stride"], conv.attrs["padding"]

    def out(d: int, stride: int, pad: int) -> str:
        span = f"{x}.shape[{d}] + {2 * pad} - {w}.shape[{d}]" if pad else f"{x}.shape[{d}] - {w}.shape[{d}]"
        return f"(({span}) // {stride} + 1)" if stride != 1 else f"({span} + 1)"

    return (f"{x}.shape[0]", f"{w}.shape[0]", out(2, sh, ph), out(3, sw, pw))


def move_channels_last(prog: Program) -> Value | None:
    """Rewrite a program with a convolution so that its epilogue works in ``[N, P, Q, K]`` order: epilogue inputs
    are viewed that way by the forward, outputs are written that way and returned as NCHW views. Returns the
    convolution (None: the program has none)."""
    convs = [v for v in prog.values.values() if v.kind == "conv"]
    if not convs:
        return None
    if len(convs) > 1:
        raise Unsupported("more than one convolution in one op")
    conv = convs[0]
    operands = {a.name for a in conv.args if isinstance(a, Value)}
    for v in prog.values.values():
        if v is not conv and any(isinstance(a, Value) and a.name in operands for a in v.args):
            raise Unsupported("a convolution's input or weight also used in its epilogue")
    used = {a.name for v in prog.values.values() for a in v.args if isinstance(a, Value)}
    sizes = output_sizes(conv)
    rank = conv.rank
    for v in list(prog.values.values()):
        if v is conv or v.name in operands or v.rank == 0 or (v.kind == "input" and v.name not in used):
            continue
        if v.kind not in _EPILOGUE_KINDS:
            raise Unsupported(f"a {v.kind} value next to a convolution: only pointwise epilogues (batch norm, "
                              "activations, per-channel or full-size operands) are fused")
        if v.rank > rank:
            raise Unsupported(f"{v.name} has more dimensions than the convolution's output")
        if v.kind == "input":
            view_moved(prog, v, rank, CHANNELS_LAST)
            continue
        padded = ("1",) * (rank - v.rank) + tuple(v.shape)
        padded = tuple(size if size == "1" else sizes[d] for d, size in enumerate(padded))
        v.rank, v.shape = rank, tuple(padded[i] for i in CHANNELS_LAST)
    conv.shape = tuple(sizes[i] for i in CHANNELS_LAST)
    for i, o in enumerate(prog.outputs):
        if o.rank != rank:
            raise Unsupported(f"output {i} of an op with a convolution is not the convolution's full output")
        prog.output_perms[i] = TO_NCHW
    return conv


# -- the kernel -------------------------------------------------------------------------------------
def conv_body(writer: KernelWriter) -> None:
    """The implicit-GEMM kernel: grouped tile order, im2col loads with padding masks, fp32 ``tl.dot``, then the
    epilogue on the accumulator and the store."""

    from kernelevo.search.offline.emit import Col
    from kernelevo.search.offline.kernels import dot_lines

    an, em = writer.an, writer.em
    conv = an.conv
    if conv is None or an.rank != 4 or an.reductions or an.row_outputs or an.globals_:
        raise Unsupported("conv-implicit-gemm needs one 2-D convolution with a pointwise epilogue")
    x, wt = conv.tensor_arg(0), conv.tensor_arg(1)
    (sh, sw), (ph, pw) = conv.attrs["stride"], conv.attrs["padding"]
    c, h, wd = (em.scalar(f"{x.name}.shape[{d}]", name) for d, name in ((1, "C"), (2, "H"), (3, "W")))
    k, r, s = (em.scalar(f"{wt.name}.shape[{d}]", name) for d, name in ((0, "K_out"), (2, "R"), (3, "S")))
    xs = [em.scalar(f"{x.name}.stride({d})", f"x_stride{d}") for d in range(4)]
    ws = [em.scalar(f"{wt.name}.stride({d})", f"w_stride{d}") for d in range(4)]
    x_ptr, w_ptr = em.pointer(x.name), em.pointer(wt.name)
    writer.body += [
        "    # implicit GEMM: rows are output positions (n, p, q), columns output channels; the reduction runs",
        "    # over the filter taps (r, s) and input channels, whose im2col addresses are computed here",
        "    pid = tl.program_id(0)",
        "    num_pid_m = tl.cdiv(n_rows, BLOCK_M)",
        f"    num_pid_n = tl.cdiv({k}, BLOCK_N)",
        "    num_pid_in_group = GROUP_M * num_pid_n",
        "    first_pid_m = (pid // num_pid_in_group) * GROUP_M",
        "    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)",
        "    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)",
        "    pid_n = (pid % num_pid_in_group) // group_size_m",
    ]
    writer.prologue("pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]")
    writer.body += [
        "    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]",
        f"    col_mask = cols < {k}",
        "    mask = row_mask & col_mask",
        f"    h_start = i1 * {sh} - {ph}",
        f"    w_start = i2 * {sw} - {pw}",
        f"    x_at = {x_ptr} + i0 * {xs[0]}",
        f"    w_at = {w_ptr} + cols * {ws[0]}",
        "    ks = tl.arange(0, BLOCK_K)",
        f"    c_blocks = tl.cdiv({c}, BLOCK_K)",
        "    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)",
        f"    for step in range(0, {r} * {s} * c_blocks):",
        "        tap = step // c_blocks",
        "        ch = (step - tap * c_blocks) * BLOCK_K + ks",
        f"        tap_r = tap // {s}",
        f"        tap_s = tap - tap_r * {s}",
        "        h_in = h_start + tap_r",
        "        w_in = w_start + tap_s",
        f"        in_image = row_mask & (h_in >= 0) & (h_in < {h}) & (w_in >= 0) & (w_in < {wd})",
        f"        ch_ok = ch < {c}",
        f"        a = tl.load(x_at + h_in * {xs[2]} + w_in * {xs[3]} + ch[None, :] * {xs[1]},",
        "                    mask=in_image & ch_ok[None, :], other=0.0)",
        f"        b = tl.load(w_at + ch[:, None] * {ws[1]} + tap_r * {ws[2]} + tap_s * {ws[3]},",
        "                    mask=ch_ok[:, None] & col_mask, other=0.0)",
    ]
    writer.body += [*dot_lines(x.dtype), "    # epilogue on the fp32 accumulator"]
    em.acc_var, em.col_mask = "acc", "col_mask"
    em.loop_lines = em.row_lines
    writer.store_outputs(Col("cols", "base", "mask"), an.full_outputs)
    writer.flush_row_lines()
    writer.grid = f"(triton.cdiv(n_rows, BLOCK_M) * triton.cdiv({wt.name}.shape[0], BLOCK_N),)"
