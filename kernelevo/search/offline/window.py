"""Sliding windows (pooling): ``avg_pool2d`` and ``max_pool2d`` as a lane value that loops over its window.

A pooled tensor ``[..., P, Q]`` is a value like any other of the row kernels: its rows are positions in the
leading dims (the last of them the output row ``p``), its columns the output column ``q``. Each lane computes its
own window: for every tap ``(kh, kw)`` it loads the input at ``(p * stride_h - pad_h + kh * dil_h, q * stride_w -
pad_w + kw * dil_w)``, masked where the tap falls in the padding, and sums (average) or takes the maximum, in fp32.
So pointwise ops after the pooling (a scale, an activation, a residual) fuse into the same kernel, and every row
strategy (one pass, looped, 2-D tiles) implements it. Nothing is unfolded in memory.

Semantics as PyTorch's: the average divides by the window's size counted up to the padded border
(``count_include_pad=True``), by the taps inside the input (``False``), or by ``divisor_override``; the maximum
ignores padding and propagates NaN. Windows run over the last two dims of an input of the op (or a view of it),
of rank 3 or 4 (``avg_pool1d`` reaches here as a 2-D pooling of a ``[N, C, 1, L]`` view). Not lowered, each named
by :func:`pool_problem`: ``ceil_mode=True`` where PyTorch may drop a last window that starts in the right padding
(it depends on the input's size in a way the traced shapes do not keep; ``padding + stride <= kernel`` in each dim
rules that out, and is lowered), the indices of ``max_pool2d(return_indices=True)``, pooling of a computed tensor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernelevo.search.offline.ir import Unsupported, Value

if TYPE_CHECKING:
    from kernelevo.search.offline.emit import Col, Emitter
    from kernelevo.search.offline.lower import Lowering

# ATen name -> the reduction over the window
WINDOW_OPS = {"avg_pool2d": "mean", "max_pool2d_with_indices": "max"}
UNROLL_TAPS = 64  # windows of up to this many taps are unrolled (tl.static_range); larger ones loop


def pool_args(name: str, args: list[Any] | tuple[Any, ...]) -> dict[str, Any]:
    """The traced arguments of a pooling call with PyTorch's defaults filled in (stride defaults to the kernel)."""
    def pair(x: Any, default: list[int]) -> list[Any]:
        if x is None or (isinstance(x, (list, tuple)) and len(x) == 0):
            x = default
        items: list[Any] = list(x) if isinstance(x, (list, tuple)) else [x]
        return items * 2 if len(items) == 1 else items

    def at(i: int, default: Any) -> Any:
        return args[i] if len(args) > i else default

    kernel = pair(at(1, None), [])
    if name == "avg_pool2d":  # (x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
        return {"kernel": kernel, "stride": pair(at(2, None), kernel), "padding": pair(at(3, None), [0]),
                "dilation": [1, 1], "ceil_mode": at(4, False), "count_include_pad": at(5, True),
                "divisor_override": at(6, None)}
    # max_pool2d_with_indices(x, kernel, stride, padding, dilation, ceil_mode)
    return {"kernel": kernel, "stride": pair(at(2, None), kernel), "padding": pair(at(3, None), [0]),
            "dilation": pair(at(4, None), [1]), "ceil_mode": at(5, False), "count_include_pad": False,
            "divisor_override": None}


def pool_problem(name: str, x_rank: int, pool: dict[str, Any]) -> str | None:
    """Why a pooling call with these arguments is not lowered (None: it is). Pure."""
    numbers = [*pool["kernel"], *pool["stride"], *pool["padding"], *pool["dilation"]]
    if x_rank not in (3, 4):
        return f"a pooling of a rank-{x_rank} tensor: only [C, H, W] and [N, C, H, W] inputs are lowered"
    if not all(type(n) is int for n in numbers) or len(numbers) != 8:
        return "kernel size, stride, padding or dilation that are not two plain numbers each"
    if min(numbers) < 0 or min(*pool["kernel"], *pool["stride"], *pool["dilation"]) < 1:
        return f"kernel {pool['kernel']}, stride {pool['stride']}: sizes must be positive"
    if pool["ceil_mode"] and any(p + s > k for k, s, p in zip(pool["kernel"], pool["stride"], pool["padding"])):
        return (f"ceil_mode=True with kernel {pool['kernel']}, stride {pool['stride']} and padding {pool['padding']}: "
                "PyTorch drops a last window that would start in the right padding, which depends on the input size "
                "in a way the traced shapes do not keep; lowered only where padding + stride <= kernel in each dim "
                "(no window is ever dropped). Use ceil_mode=False or pad the input yourself")
    divisor = pool["divisor_override"]
    if divisor is not None and (type(divisor) is not int or divisor == 0):
        return f"divisor_override={divisor!r}: only a non-zero integer is lowered"
    return None


def node_problem(node: Any) -> str | None:
    """Why a traced pooling call is not lowered (None: it is, or it is not a pooling). Reads the graph only."""
    from kernelevo.search.offline.lower import op_name

    name = op_name(node.target)
    if name not in WINDOW_OPS:
        return None
    x = node.args[0]
    rank = x.meta["val"].dim() if hasattr(x, "meta") and "val" in x.meta else 0
    problem = pool_problem(name, rank, pool_args(name, node.args))
    if problem is None and name == "max_pool2d_with_indices" and _indices_used(node):
        problem = "the indices of max_pool2d (return_indices=True) are not lowered, only its values"
    return problem


def _indices_used(node: Any) -> bool:
    """Whether anything reads output 1 (the argmax indices) of ``max_pool2d_with_indices``."""
    import operator

    return any(u.target is operator.getitem and u.args[1] == 1 and u.users for u in node.users)


def lower_pool(lowering: Lowering, node: Any, name: str, args: list[Any]) -> Value | list[Value]:
    """A pooling call as a ``window`` value (for ``max_pool2d_with_indices``, the pair (values, indices), of which
    only the values may be read)."""
    x = args[0]
    problem = node_problem(node)
    if problem is not None:
        raise Unsupported(f"aten.{name}: {problem}")
    if not isinstance(x, Value) or x.kind != "input":
        raise Unsupported(f"aten.{name} of a computed tensor: only inputs of the op and their views are pooled; "
                          "pool first where the math allows it (max_pool2d(relu(x)) is relu(max_pool2d(x)): pointwise "
                          "ops after a pooling fuse into its kernel), or split the op so the pooled tensor is an input")
    if x.dtype is None or not x.dtype.is_floating_point:
        raise Unsupported(f"aten.{name} of {x.dtype} values: only floating-point inputs are pooled")
    pool = pool_args(name, args)
    val = node.meta["val"]
    out = val[0] if isinstance(val, (tuple, list)) else val
    window = Value(node.name, "window", (x,), out.dim(), tuple(lowering.sym(d) for d in out.shape), out.dtype,
                   {"op": WINDOW_OPS[name], "kernel": pool["kernel"], "stride": pool["stride"],
                    "padding": pool["padding"], "dilation": pool["dilation"],
                    "count_include_pad": bool(pool["count_include_pad"]), "ceil_mode": bool(pool["ceil_mode"]),
                    "divisor_override": pool["divisor_override"]})
    lowering.values[window.name] = window
    if name == "max_pool2d_with_indices":
        return [window, window]  # the indices are never read (node_problem refused that above)
    return window


# -- the kernel's lanes ------------------------------------------------------------------------------
def window(em: Emitter, v: Value, col: Col, ctx: int) -> tuple[str, str, str]:
    """The pooled value at each (row, column) of the tile: a loop over the window's taps."""
    x = v.tensor_arg()
    if ctx != em.rank or v.rank != em.rank or col.kind == "none":
        raise Unsupported(f"{v.name}: a pooled tensor used per row or viewed with other dims than its own")
    (kh, kw), (sh, sw) = v.attrs["kernel"], v.attrs["stride"]
    (ph, pw), (dh, dw) = v.attrs["padding"], v.attrs["dilation"]
    rank = x.rank
    h, w = (em.scalar(f"{x.name}.shape[{d}]", f"{x.name}_{n}") for d, n in ((rank - 2, "H"), (rank - 1, "W")))
    hs, ws = (em.scalar(f"{x.name}.stride({d})", f"{x.name}_stride{d}") for d in (rank - 2, rank - 1))
    lead = [f"i{d} * {em.scalar(f'{x.name}.stride({d})', f'{x.name}_stride{d}')}" for d in range(rank - 2)]
    p = f"i{em.rank - 2}"  # the output row: the last leading dim
    scope = "row" if col.kind == "row" else "loop"
    mask = col.mask if col.kind == "base" else "row_mask"
    plane = em.fresh(f"{x.name}_plane")
    em._put("row", f"{plane} = {em.pointer(x.name)} + {' + '.join(lead) if lead else '0'}")
    h0, w0 = em.fresh("h_start"), em.fresh("w_start")
    em._put("row", f"{h0} = {_start(p, sh, ph)}")
    em._put(scope, f"{w0} = {_start(col.var, sw, pw)}")
    op = v.attrs["op"]
    identity = "0.0" if op == "mean" else 'float("-inf")'  # padding adds nothing to a sum, never wins a max
    acc = em.fresh(f"{op}_acc")
    shape = "[BLOCK_ROWS, 1]" if col.kind == "row" else "[BLOCK_ROWS, BLOCK_COLS]"
    em._put(scope, f"{acc} = tl.full({shape}, {identity}, dtype=tl.float32)")
    loop = "tl.static_range" if kh * kw <= UNROLL_TAPS else "range"
    tap_h, tap_w = em.fresh("tap_h"), em.fresh("tap_w")
    at_h, at_w, inside = em.fresh("h_in"), em.fresh("w_in"), em.fresh("in_input")
    em._put(scope, f"for {tap_h} in {loop}({kh}):")
    em._put(scope, f"    {at_h} = {h0} + {tap_h}" + (f" * {dh}" if dh != 1 else ""))
    em._put(scope, f"    for {tap_w} in {loop}({kw}):")
    em._put(scope, f"        {at_w} = {w0} + {tap_w}" + (f" * {dw}" if dw != 1 else ""))
    em._put(scope, f"        {inside} = {mask} & ({at_h} >= 0) & ({at_h} < {h}) & ({at_w} >= 0) & ({at_w} < {w})")
    load = f"tl.load({plane} + {at_h} * {hs} + {at_w} * {ws}, mask={inside}, other={identity}).to(tl.float32)"
    if op == "mean":
        em._put(scope, f"        {acc} += {load}")
        return f"{acc} / {_divisor(v, h0, w0, h, w)}", scope, "f"
    tap = em.fresh("tap")
    em._put(scope, f"        {tap} = {load}")
    em._put(scope, f"        {acc} = tl.maximum({acc}, {tap}, propagate_nan=tl.PropagateNan.ALL)")
    return acc, scope, "f"


def _start(position: str, stride: int, pad: int) -> str:
    """Where the window of output ``position`` starts in the input (negative: in the padding)."""
    start = position if stride == 1 else f"{position} * {stride}"
    return f"{start} - {pad}" if pad else start


def _divisor(v: Value, h0: str, w0: str, h: str, w: str) -> str:
    """What an average pooling divides its window's sum by, as PyTorch does: ``divisor_override``; else the taps of
    the window inside the padded input (``count_include_pad``: the whole window, but where ``ceil_mode`` lets the
    last one run past the padding) or inside the input itself (fewer at the borders)."""
    override = v.attrs.get("divisor_override")
    (kh, kw), (ph, pw) = v.attrs["kernel"], v.attrs["padding"]
    if override is not None:
        return f"{float(override)!r}"
    ceil = v.attrs.get("ceil_mode", False)
    if not ceil and (v.attrs.get("count_include_pad", True) or (ph == 0 and pw == 0)):
        return f"{float(kh * kw)!r}"
    if v.attrs.get("count_include_pad", True):  # clipped to the padded input
        rows = f"(tl.minimum({h0} + {kh}, {h} + {ph}) - {h0})"
        cols = f"(tl.minimum({w0} + {kw}, {w} + {pw}) - {w0})"
    else:  # clipped to the input
        rows = f"(tl.minimum({h0} + {kh}, {h}) - tl.maximum({h0}, 0))"
        cols = f"(tl.minimum({w0} + {kw}, {w}) - tl.maximum({w0}, 0))"
    return f"({rows} * {cols}).to(tl.float32)"
