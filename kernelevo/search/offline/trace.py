"""Trace a KernelBench-format task into an ATen graph with symbolic shapes.

The offline proposer needs the op's math as data: this module loads the task source into a
private module namespace, builds ``Model(*get_init_inputs())`` and runs ``make_fx`` in symbolic
mode over small CPU inputs, so that sizes stay expressions of the input shapes (a kernel generated
from the trace then works for every case of the task, not only the traced one). Every input dim gets its own
symbol, whatever its size in the traced case (no duck shaping: ``_aten_graph``); only the op's own
constraints (a broadcast, a matmul's inner dim) tie two dims together.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import torch
    from torch._ops import OpOverload

_DECOMPOSE = (
    "_softmax",
    "_log_softmax",
    "native_layer_norm",
    "gelu",
    "silu",
    "var_mean",
    "hardswish",
    "hardsigmoid",
    "hardtanh",
    "softplus",
    "mish",
    "leaky_relu",
    "elu",
    "logsumexp",
    "nll_loss_forward",
    "linalg_vector_norm",
)


class TraceError(Exception):
    """The task could not be loaded or traced (the message says which part and why)."""


@dataclass
class TracedTask:
    """A task's forward pass as an fx graph plus what is needed to rebuild its interface."""

    graph: Any  # torch.fx.GraphModule
    param_names: list[str]  # state_dict names, in placeholder order
    param_shapes: dict[str, tuple[int, ...]]
    param_dtypes: dict[str, Any]
    input_names: list[str]  # forward's parameter names, in placeholder order
    init_signature: str  # "self, hidden: int = 4096, eps: float = 1e-06"
    forward_signature: str  # "self, x"
    returns_tuple: bool
    small_inputs: list[Any] = field(default_factory=list)
    widest_case_dim: int | None = None  # largest last dim of any input over get_cases() (None: unknown)
    meta_cases: list[list[Any]] = field(default_factory=list)  # get_cases() on the meta device (no memory)
    init_inputs: list[Any] = field(default_factory=list)  # get_init_inputs(), as traced
    source: str = ""  # the task's source (the generated __init__ replays its Model's constructor)
    scalar_attrs: dict[str, str] = field(default_factory=dict)  # "node:arg" -> host expression of self.<attr>
    frozen_attrs: dict[str, float] = field(default_factory=dict)  # "self.<attr>" -> the value the kernel bakes in


def load_task_module(task_source: str, name: str = "kernelevo_task") -> types.ModuleType:
    """Execute a task's source in a fresh module object (not registered in ``sys.modules``)."""
    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    try:
        exec(compile(task_source, f"<{name}>", "exec"), module.__dict__)
    except Exception as exc:  # the task is user code: report what failed, do not crash the search
        raise TraceError(f"could not execute the task source: {type(exc).__name__}: {exc}") from exc
    if not hasattr(module, "Model"):
        raise TraceError("the task defines no `class Model(nn.Module)`")
    return module


def _signature_text(fn: Any) -> str:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return "self, *args"
    parts = []
    for p in sig.parameters.values():
        text = p.name
        if p.kind is p.VAR_POSITIONAL:
            text = "*" + text
        elif p.kind is p.VAR_KEYWORD:
            text = "**" + text
        if p.default is not p.empty:
            text += f"={p.default!r}"
        parts.append(text)
    return ", ".join(parts)


def _decompositions() -> dict[OpOverload, Callable[..., Any]]:
    import torch
    from torch._decomp import core_aten_decompositions, get_decompositions

    table = dict(core_aten_decompositions())
    ops = [getattr(torch.ops.aten, n) for n in _DECOMPOSE if hasattr(torch.ops.aten, n)]
    table.update(get_decompositions(ops))
    # torch types both tables' keys as OperatorBase; they hold OpOverloads (get_decompositions expands the
    # packets it is given), which is what make_fx's decomposition_table takes.
    return cast("dict[OpOverload, Callable[..., Any]]", table)


def small_inputs_of(module: types.ModuleType) -> list[Any]:
    """The inputs to trace with: the first small case, else the task's ``get_inputs()``."""
    if hasattr(module, "get_small_cases"):
        cases = module.get_small_cases()
        if cases:
            return list(cases[0])
    return list(module.get_inputs())


def meta_cases_of(module: types.ModuleType) -> list[list[Any]]:
    """The scored cases built on the meta device (shapes, dtypes and strides, no memory for the real
    sizes); empty when the cases cannot be built that way (a builder that needs real data)."""
    import torch

    build = getattr(module, "get_cases", None)
    try:
        with torch.device("meta"):
            cases = build() if build is not None else [module.get_inputs()]
        return [list(case) for case in cases]
    except Exception:  # e.g. .item() on a meta tensor: the cases stay unknown
        return []


def widest_case_dim(module: types.ModuleType, cases: list[list[Any]] | None = None) -> int | None:
    """The largest last dimension of any tensor input over the scored cases (None: unknown)."""
    import torch

    cases = meta_cases_of(module) if cases is None else cases
    dims = [t.shape[-1] for case in cases for t in case if isinstance(t, torch.Tensor) and t.dim() > 0]
    return max(dims) if dims else None


def attribute_access(parts: list[str]) -> str | None:
    """``self.a.b[0].eps`` for a module path, or None when a part is not a plain public name or an
    index (the names come from the user's model and end up in generated code)."""
    import keyword

    text = "self"
    for part in parts:
        if part.isdigit() and len(part) < 10:
            text += f"[{int(part)}]"
        elif part.isidentifier() and part.isascii() and not keyword.iskeyword(part) and not part.startswith("_"):
            text += f".{part}"
        else:
            return None
    return text


def _float_attributes(model: Any) -> list[tuple[str, str, float]]:
    """(module path, attribute, value) of every plain float attribute of the model and its submodules
    (eps, temperature, negative slope ...): constructor arguments the forward reads as Python numbers."""
    found = []
    for path, mod in model.named_modules():
        for attr, value in vars(mod).items():
            if type(value) is float and not attr.startswith("_") and attr.isidentifier() and value == value \
                    and value not in (0.0, float("inf"), float("-inf")):
                found.append((path, attr, value))
    return found


def _constants(graph: Any) -> list[tuple[str, float]]:
    """(node name:argument position, value) of every float constant a call in the graph takes."""
    out: list[tuple[str, float]] = []
    for node in graph.graph.nodes:
        if node.op != "call_function":
            continue
        items = [(str(i), a) for i, a in enumerate(node.args)] + [(k, v) for k, v in node.kwargs.items()]
        for key, value in items:
            if type(value) is float:
                out.append((f"{node.name}:{key}", value))
    return out


def _forms(sentinels: dict[str, float]) -> list[tuple[float, str]]:
    """The host expressions a graph constant may be of the model's float attributes, each with its value at the
    sentinels: an attribute itself, its negation, reciprocal, complement (``1 - beta``), square and square roots,
    and the product and quotients of two (``lr * weight_decay``): how forwards derive the numbers they use."""
    import math

    out: list[tuple[float, str]] = []
    items = list(sentinels.items())
    for expr, v in items:
        a = f"float({expr})"
        out += [(v, a), (-v, f"-{a}"), (1.0 - v, f"1.0 - {a}"), (v - 1.0, f"{a} - 1.0"), (v * v, f"{a} * {a}"),
                (1.0 / v, f"1.0 / {a}"), (-1.0 / v, f"-1.0 / {a}")]
        if v > 0:
            out += [(math.sqrt(v), f"{a} ** 0.5"), (1.0 / math.sqrt(v), f"1.0 / {a} ** 0.5")]
    for i, (ex, x) in enumerate(items):
        for ey, y in items[i + 1:]:
            fx, fy = f"float({ex})", f"float({ey})"
            out += [(x * y, f"{fx} * {fy}"), (-x * y, f"-({fx} * {fy})"), (x / y, f"{fx} / {fy}"),
                    (y / x, f"{fy} / {fx}")]
    return out


def _matching(value: float, forms: list[tuple[float, str]]) -> str | None:
    """The one expression whose value at the sentinels is ``value`` (to a few ulps: ``x ** 0.5`` and a
    forward's ``math.sqrt`` may differ in the last bit); None when none or several do."""
    import math

    found = {expr for v, expr in forms if math.isclose(v, value, rel_tol=1e-13, abs_tol=0.0)}
    return found.pop() if len(found) == 1 else None


@dataclass
class ScalarAttributes:
    """How the traced graph's float constants relate to the model's float attributes."""

    mapping: dict[str, str] = field(default_factory=dict)  # "node:arg" -> host expression (float(self.eps))
    # attributes a constant follows in a way no expression above gives: access -> the traced value. The generated
    # forward refuses other values (its kernel bakes in what it derived from them) instead of computing wrongly.
    frozen: dict[str, float] = field(default_factory=dict)


def scalar_attributes(module: types.ModuleType, init_args: list[Any], inputs: list[Any],
                      graph: Any) -> ScalarAttributes:
    """Which float constants of the traced graph are the model's own attributes (``self.eps``) or simple
    functions of them (``1 - self.beta1``, ``self.lr * self.weight_decay``), so that the generated forward
    computes them from the instance instead of baking in the traced value.

    Traces once more with every float attribute set to a distinct nearby value: a constant that follows them as
    one of :func:`_forms` is that expression. A constant that follows them otherwise is traced again with one
    attribute moved at a time, and the attributes it follows are frozen (see :class:`ScalarAttributes`). Empty
    when nothing follows or a second trace differs in shape."""
    try:
        model = module.Model(*init_args).eval()
        attrs = _float_attributes(model)
        if not attrs:
            return ScalarAttributes()
        moved = [(path, attr, value * (1.0 + (i + 1) * 2.0**-12)) for i, (path, attr, value) in enumerate(attrs)]
        again = _retrace(model, moved, inputs)
    except Exception:  # the constants stay baked in, as traced
        return ScalarAttributes()
    before, after = _constants(graph), _constants(again)
    if [k for k, _ in before] != [k for k, _ in after]:
        return ScalarAttributes()
    accesses = {(path, attr): attribute_access(path.split(".") + [attr] if path else [attr])
                for path, attr, _ in attrs}
    forms = _forms({access: v for p, a, v in moved if (access := accesses[(p, a)]) is not None})
    result, unexplained = ScalarAttributes(), []
    for (key, old), (_, new) in zip(before, after):
        if old == new:
            continue
        expr = _matching(new, forms)
        if expr is not None:
            result.mapping[key] = expr
        else:
            unexplained.append(key)
    if unexplained:
        result.frozen = _followed(model, attrs, accesses, inputs, unexplained, dict(before))
    return result


def _retrace(model: Any, moved: list[tuple[str, str, float]], inputs: list[Any]) -> Any:
    """The model traced with the given attributes set to new values (restored afterwards)."""
    saved = []
    for path, attr, value in moved:
        owner = model.get_submodule(path) if path else model
        saved.append((owner, attr, getattr(owner, attr)))
        setattr(owner, attr, value)
    try:
        return _aten_graph(model, inputs)
    finally:
        for owner, attr, value in saved:
            setattr(owner, attr, value)


def _aten_graph(model: Any, inputs: list[Any], record_stack_traces: bool = False) -> Any:
    """``model.forward`` as an ATen graph with symbolic sizes, its parameters and buffers as the first inputs."""
    import torch
    from torch.func import functional_call
    from torch.fx.experimental import _config as fx_config
    from torch.fx.experimental.proxy_tensor import make_fx

    state = dict(model.named_parameters())
    state.update(dict(model.named_buffers()))

    def forward(params: dict[str, torch.Tensor], *args: Any) -> Any:
        return functional_call(model, params, args)

    # one symbol per input dim (by position, not by value): without this, make_fx's "duck shaping" gives dims of
    # equal size in the traced case one symbol, and a kernel generated from a [4, 4, 8] trace reads a [2, 6, 8]
    # case as [2, 2, 8]. Dims that the op itself ties together (a broadcast, a matmul's K) are still unified by
    # the guards the trace records.
    with torch.no_grad(), fx_config.patch(use_duck_shape=False):  # type: ignore[attr-defined]  # installed at import
        return make_fx(forward, tracing_mode="symbolic", decomposition_table=_decompositions(),
                       record_stack_traces=record_stack_traces)(state, *inputs)


def _followed(model: Any, attrs: list[tuple[str, str, float]], accesses: dict[tuple[str, str], str | None],
              inputs: list[Any], keys: list[str], traced: dict[str, float]) -> dict[str, float]:
    """The attributes (access -> traced value) that the constants at ``keys`` change with, one moved at a time.
    An attribute without a plain access cannot be checked from generated code: then nothing is frozen for it."""
    frozen: dict[str, float] = {}
    for path, attr, value in attrs:
        access = accesses[(path, attr)]
        if access is None:
            continue
        try:
            again = dict(_constants(_retrace(model, [(path, attr, value * (1.0 + 2.0**-10))], inputs)))
        except Exception:  # noqa: BLE001 - cannot tell: freeze it (a refusal is safe, a wrong kernel is not)
            frozen[access] = value
            continue
        if any(again.get(key) != traced.get(key) for key in keys):
            frozen[access] = value
    return frozen


def size_equalities(graph: Any) -> list[tuple[Any, Any]]:
    """(expression, the expression it equals) for each equality of sizes the op imposes that the trace keeps as a
    guard between two expressions rather than as a symbol's replacement: a loss reshaping ``[B, T, V]`` logits to
    ``[B * T, V]`` against ``[B, T]`` targets reshaped to ``[B * T]`` gives ``Eq(s0*s1, s2*s3)``. Each pair rewrites
    the more complex side (else the one whose symbols come from later input dims) into the other, so the sizes the
    op ties render as one expression; equalities between expressions of the same dims are left alone. Pure: reads
    the graph's placeholders and their shape environment."""
    import sympy

    order: dict[Any, int] = {}  # symbol -> its first input dim, in placeholder order
    env = None
    for node in graph.graph.nodes:
        if node.op != "placeholder" or not hasattr(node.meta.get("val"), "shape"):
            continue
        for size in node.meta["val"].shape:
            expr = getattr(getattr(size, "node", None), "expr", None)
            if expr is not None:
                env = size.node.shape_env
                for free in sorted(expr.free_symbols, key=str):
                    order.setdefault(free, len(order))  # after the trace's replacements
    if env is None:
        return []
    pairs = []
    for guard in env.guards:
        eq = guard.expr
        # only ties between dims of different origins: an identity of one dim's own sizes (a parity the trace
        # specialised on, a ``Max(1, ...)``) is the trace's business, not a rendering
        # (and only between sizes of the inputs as they stand: a symbol the trace replaced is no input's size)
        if not isinstance(eq, sympy.Eq) or eq.lhs.free_symbols & eq.rhs.free_symbols or eq.lhs.is_number \
                or eq.rhs.is_number or not eq.free_symbols <= order.keys():
            continue
        sides = sorted((eq.lhs, eq.rhs), key=lambda e: (sympy.count_ops(e), max(order[s] for s in e.free_symbols)))
        if sides[0] != sides[1]:
            pairs.append((sides[1], sides[0]))
    return pairs


def trace_task(task_source: str) -> TracedTask:
    """Trace ``Model.forward`` of a task to ATen ops with symbolic sizes."""
    import torch

    module = load_task_module(task_source)
    try:
        init_args = list(module.get_init_inputs()) if hasattr(module, "get_init_inputs") else []
        model = module.Model(*init_args).eval()
        inputs = small_inputs_of(module)
    except Exception as exc:
        raise TraceError(f"could not build the model or its inputs: {type(exc).__name__}: {exc}") from exc

    state = dict(model.named_parameters())
    state.update(dict(model.named_buffers()))
    try:
        with torch.no_grad():
            result = model(*inputs)
        graph = _aten_graph(model, inputs, record_stack_traces=True)
    except Exception as exc:
        raise TraceError(f"make_fx could not trace Model.forward: {type(exc).__name__}: {exc}") from exc

    meta_cases = meta_cases_of(module)
    forward_params = list(inspect.signature(model.forward).parameters)
    input_names = forward_params[: len(inputs)] if len(forward_params) >= len(inputs) else [
        f"in{i}" for i in range(len(inputs))
    ]
    scalars = scalar_attributes(module, init_args, inputs, graph)
    return TracedTask(
        graph=graph,
        param_names=list(state),
        param_shapes={k: tuple(v.shape) for k, v in state.items()},
        param_dtypes={k: v.dtype for k, v in state.items()},
        input_names=input_names,
        init_signature=_signature_text(module.Model.__init__),
        forward_signature="self, " + ", ".join(input_names),
        returns_tuple=isinstance(result, (tuple, list)),
        small_inputs=inputs,
        widest_case_dim=widest_case_dim(module, meta_cases),
        meta_cases=meta_cases,
        init_inputs=init_args,
        source=task_source,
        scalar_attrs=scalars.mapping,
        frozen_attrs=scalars.frozen,
    )
