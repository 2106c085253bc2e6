"""Trace a KernelBench-format task into an ATen graph with symbolic shapes.

The offline proposer needs the op's math as data: this module loads the task source into a
private module namespace, builds ``Model(*get_init_inputs())`` and runs ``make_fx`` in symbolic
mode over small CPU inputs, so that sizes stay expressions of the input shapes (a kernel generated
from the trace then works for every case of the task, not only the traced one).
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
    "softplus",
    "mish",
    "leaky_relu",
    "elu",
    "logsumexp",
    "nll_loss_forward",
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


def widest_case_dim(module: types.ModuleType) -> int | None:
    """The largest last dimension of any tensor input over the scored cases, read on the meta device
    (no memory is allocated for the real sizes); None when the cases cannot be built that way."""
    import torch

    build = getattr(module, "get_cases", None)
    try:
        with torch.device("meta"):
            cases = build() if build is not None else [module.get_inputs()]
        dims = [t.shape[-1] for case in cases for t in case if isinstance(t, torch.Tensor) and t.dim() > 0]
    except Exception:  # a case builder that needs real data (e.g. .item()) simply leaves this unknown
        return None
    return max(dims) if dims else None


def trace_task(task_source: str) -> TracedTask:
    """Trace ``Model.forward`` of a task to ATen ops with symbolic sizes."""
    import torch
    from torch.func import functional_call
    from torch.fx.experimental.proxy_tensor import make_fx

    module = load_task_module(task_source)
    try:
        init_args = list(module.get_init_inputs()) if hasattr(module, "get_init_inputs") else []
        model = module.Model(*init_args).eval()
        inputs = small_inputs_of(module)
    except Exception as exc:
        raise TraceError(f"could not build the model or its inputs: {type(exc).__name__}: {exc}") from exc

    state = dict(model.named_parameters())
    state.update(dict(model.named_buffers()))

    def forward(params: dict[str, torch.Tensor], *args: Any) -> Any:
        return functional_call(model, params, args)

    try:
        with torch.no_grad():
            result = model(*inputs)
            graph = make_fx(forward, tracing_mode="symbolic", decomposition_table=_decompositions())(
                state, *inputs
            )
    except Exception as exc:
        raise TraceError(f"make_fx could not trace Model.forward: {type(exc).__name__}: {exc}") from exc

    forward_params = list(inspect.signature(model.forward).parameters)
    input_names = forward_params[: len(inputs)] if len(forward_params) >= len(inputs) else [
        f"in{i}" for i in range(len(inputs))
    ]
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
        widest_case_dim=widest_case_dim(module),
    )
