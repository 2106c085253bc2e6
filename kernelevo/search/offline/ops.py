"""The pointwise op table: ATen op name -> Triton expression (fp32 math, no libdevice).

Functions that need libdevice on the GPU and do not exist in the Triton interpreter are written
from primitives that both have: tanh via sigmoid, round-half-even via floor, tanh-GELU via tanh.
Division and square root use the IEEE-rounded forms where a value reaches a decision (``attrs["exact"]``,
set by ``ir.mark_exact``: a rounding, a comparison, a cast to an integer), so results match PyTorch bit
for bit where it matters (quantisation boundaries), and Triton's fast forms elsewhere; a division by a
Python number is rounded as PyTorch rounds it on each device (``div_by_scalar``: CUDA multiplies by the
reciprocal, the CPU divides).
"""

from __future__ import annotations

from kernelevo.search.offline.emit import ROUND_HALF_EVEN, SCALAR_DIV, kind_of
from kernelevo.search.offline.lower import Unsupported, Value

SQRT_2_OVER_PI = 0.7978845608028654
INV_SQRT_2 = 0.7071067811865476


def _tanh(x: str) -> str:
    return f"(2.0 * tl.sigmoid(2.0 * {x}) - 1.0)"


def _as_float(expr: str, kind: str) -> str:
    if kind == "f":
        return expr
    try:
        return repr(float(int(expr)))  # an integer literal used in float math
    except ValueError:
        return f"{expr}.to(tl.float32)"


def pointwise(v: Value, ops: list[tuple[str, str, str]], helpers: set[str]) -> tuple[str, str]:
    """Return (Triton expression, kind) for the pointwise value ``v`` over emitted operands."""
    op = v.attrs["op"]
    out = kind_of(v.dtype)
    kw = v.attrs.get("kwargs", {})
    if kw.get("rounding_mode"):
        raise Unsupported(f"{op} with rounding_mode={kw['rounding_mode']}")
    x = [o[0] for o in ops]
    kinds = [o[2] for o in ops]
    f = [_as_float(e, k) for e, k in zip(x, kinds)]
    a = f if out == "f" else x
    exact = bool(v.attrs.get("exact"))
    divide = "tl.math.div_rn({}, {})" if exact else "({} / {})"
    root = "tl.math.sqrt_rn({})" if exact else "tl.sqrt({})"
    if op in ("add", "sub", "mul"):
        sym = {"add": "+", "sub": "-", "mul": "*"}[op]
        alpha = kw.get("alpha", 1)
        rhs = a[1] if alpha == 1 else f"({a[1]} * {alpha})"
        return f"({a[0]} {sym} {rhs})", out
    if op == "div":
        divisor = v.args[1] if len(v.args) > 1 else None
        if not isinstance(divisor, Value) or divisor.kind == "hostfloat":  # a Python number
            helpers.add(SCALAR_DIV)
            return f"div_by_scalar({f[0]}, {f[1]}, TORCH_CUDA)", "f"
        return divide.format(f[0], f[1]), "f"
    if op == "reciprocal":
        return divide.format("1.0", f[0]), "f"
    if op == "neg":
        return f"(-{a[0]})", out
    if op == "sqrt":
        return root.format(f[0]), "f"
    unary = {"exp": "tl.exp", "exp2": "tl.exp2", "log": "tl.log", "log2": "tl.log2",
             "rsqrt": "tl.math.rsqrt", "sigmoid": "tl.sigmoid", "erf": "tl.math.erf", "floor": "tl.floor",
             "ceil": "tl.ceil", "sin": "tl.sin", "cos": "tl.cos"}
    if op in unary:
        return f"{unary[op]}({f[0]})", "f"
    if op == "abs":
        return f"tl.abs({a[0]})", out
    if op == "log1p":
        return f"tl.log(1.0 + {f[0]})", "f"
    if op == "expm1":
        return f"(tl.exp({f[0]}) - 1.0)", "f"
    if op == "tanh":
        return _tanh(f[0]), "f"
    if op == "relu":
        return f"tl.maximum({a[0]}, 0)", out
    if op == "sign":
        return f"tl.where({f[0]} > 0, 1.0, tl.where({f[0]} < 0, -1.0, 0.0))", "f"
    if op == "gelu":
        if kw.get("approximate", "none") == "tanh":
            inner = f"{SQRT_2_OVER_PI} * ({f[0]} + 0.044715 * {f[0]} * {f[0]} * {f[0]})"
            return f"(0.5 * {f[0]} * (1.0 + {_tanh('(' + inner + ')')}))", "f"
        return f"(0.5 * {f[0]} * (1.0 + tl.math.erf({f[0]} * {INV_SQRT_2})))", "f"
    if op == "pow":
        exponent = v.args[1]
        if isinstance(exponent, Value):
            return f"tl.exp2(tl.log2({f[0]}) * {f[1]})", "f"
        if exponent == 2:
            return f"({f[0]} * {f[0]})", "f"
        if exponent == 3:
            return f"({f[0]} * {f[0]} * {f[0]})", "f"
        if exponent == 0.5:
            return root.format(f[0]), "f"
        if exponent == -1:
            return divide.format("1.0", f[0]), "f"
        if exponent == 1:
            return f[0], "f"
        return f"tl.exp2(tl.log2({f[0]}) * {float(exponent)!r})", "f"
    if op == "round":
        helpers.add(ROUND_HALF_EVEN)
        return f"round_half_even({f[0]})", "f"
    if op in ("ne", "eq", "lt", "gt", "le", "ge"):
        sym = {"ne": "!=", "eq": "==", "lt": "<", "gt": ">", "le": "<=", "ge": ">="}[op]
        use = f if "f" in kinds else x
        return f"({use[0]} {sym} {use[1]})", "b"
    if op == "logical_not":
        return f"({x[0]} == 0)", "b"
    if op in ("logical_and", "logical_or", "logical_xor"):
        sym = {"logical_and": "&", "logical_or": "|", "logical_xor": "^"}[op]
        truth = [e if k == "b" else f"({e} != 0)" for e, k in zip(x, kinds)]
        return f"({truth[0]} {sym} {truth[1]})", "b"
    if op in ("bitwise_and", "bitwise_or", "bitwise_xor"):  # integer or bool operands only (torch refuses floats)
        sym = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}[op]
        return f"({x[0]} {sym} {x[1]})", out
    if op == "where":
        cond = x[0] if kinds[0] == "b" else f"({x[0]} != 0)"
        return f"tl.where({cond}, {a[1]}, {a[2]})", out
    if op in ("maximum", "minimum"):
        return f"tl.{op}({a[0]}, {a[1]})", out
    if op in ("clamp", "clamp_min", "clamp_max"):
        lo = hi = None
        if op == "clamp":
            lo = x[1] if len(x) > 1 else kw.get("min")
            hi = x[2] if len(x) > 2 else kw.get("max")
        elif op == "clamp_min":
            lo = x[1]
        else:
            hi = x[1]
        expr = a[0]
        if lo not in (None, "None"):
            expr = f"tl.maximum({expr}, {lo})"
        if hi not in (None, "None"):
            expr = f"tl.minimum({expr}, {hi})"
        return expr, out
    raise Unsupported(f"pointwise op {op}")
