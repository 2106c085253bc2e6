"""Custom operators a candidate registers with ``torch.library`` (the pattern PyTorch recommends for Triton).

``@torch.library.custom_op("mylib::rms_norm", mutates_args=())`` or ``@torch.library.triton_op(...)``
turns the decorated function into an operator; calling it (directly, or as ``torch.ops.mylib.rms_norm``)
runs that function, so the checker treats such calls as calls of the function and the kernels launched
inside (``kernel[grid]`` or ``torch.library.wrap_triton(kernel)[grid]``) as the candidate's own launches.
What stays refused is registering into PyTorch's own namespaces (``aten::``...), naming the op at run
time, and the rest of ``torch.library`` (``Library``, ``impl``, ``define``, ``register_kernel``), which can
replace the kernels of existing operators (evaluator.import_policy lists the allowed members).
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
from collections.abc import Callable
from dataclasses import dataclass

REGISTER = frozenset({"torch.library.custom_op", "torch.library.triton_op"})
COMPANIONS = frozenset({"torch.library.register_fake", "torch.library.register_autograd"})
WRAP_TRITON = frozenset({"torch.library.wrap_triton", "torch.library.capture_triton"})
_OP_NAME = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)::([A-Za-z_][A-Za-z0-9_]*)$")
# Namespaces of PyTorch and its ecosystem: registering there changes what existing ops do.
RESERVED_NAMESPACES = frozenset({
    "aten", "prim", "prims", "torch", "quantized", "quantized_decomposed", "c10d", "c10d_functional",
    "inductor", "higher_order", "profiler", "debugprims", "rngprims", "mkldnn", "mkl", "onednn", "xnnpack",
    "sparse", "fbgemm", "triton", "torchvision", "torchaudio", "torchao", "functional", "cuda", "cudnn", "cublas",
    "onnx", "fsdp", "flex_lib", "streams", "symm_mem", "export", "inductor_prims", "static_runtime", "quantization",
})  # fmt: skip

Resolve = Callable[[ast.AST], "str | None"]
Report = Callable[[str, ast.AST, str], None]


@dataclass(frozen=True)
class CustomOp:
    """One operator the candidate registers: ``namespace::name`` implemented by module function ``function``."""

    namespace: str
    name: str
    function: str | None  # the module-level function that implements it (None when not found)


def _op_name_arg(call: ast.Call) -> ast.AST | None:
    for kw in call.keywords:
        if kw.arg == "name":
            return kw.value
    return call.args[0] if call.args else None


def op_name_problem(arg: ast.AST | None) -> tuple[str, str] | str:
    """``(namespace, name)`` for a valid literal op name, else the reason it is refused."""
    if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
        return "use a string literal for the operator name (`\"mylib::op\"`), so the checker knows which op it is"
    match = _OP_NAME.match(arg.value)
    if match is None:
        return f"`{arg.value}` is not a `namespace::name` operator name; use `\"mylib::op\"`"
    namespace = match.group(1)
    if reserved_namespace(namespace):
        return (f"`{arg.value}` registers into the namespace `{namespace}`, which is not yours (PyTorch's, one with "
                "operators in this torch, or an installed package's), so it could change what existing operators "
                "do; use a namespace of your own (`mylib::op`) instead")
    return namespace, match.group(2)


def reserved_namespace(namespace: str) -> bool:
    """A namespace that is not the candidate's to register into: PyTorch's and its ecosystem's (listed, or starting
    with ``_``), one this torch has operators in, or one named like an installed package (``torchao``, whose operators
    load with it). ``torchkernels`` or ``mylib`` are the candidate's own."""
    return namespace in RESERVED_NAMESPACES or namespace.startswith("_") or namespace in _registered_namespaces() or \
        namespace in _installed_packages()


@functools.cache
def _installed_packages() -> frozenset[str]:
    """Top-level import names of the installed distributions (not folders that happen to be importable from the
    working directory: ``tests/candidates/redteam`` is no package of anyone's)."""
    return frozenset(importlib.metadata.packages_distributions())


@functools.cache
def _registered_namespaces() -> frozenset[str]:
    """Namespaces with operators in this torch, after importing what registers more on its own (the candidate
    process imports torch._dynamo before a candidate runs; torch.onnx and torch.distributed register theirs lazily:
    ``onnx::Attention`` computes a whole softmax)."""
    import importlib

    import torch

    for lazy in ("torch._dynamo", "torch.onnx", "torch.distributed.fsdp", "torch.nn.attention.flex_attention"):
        try:
            importlib.import_module(lazy)
        except Exception:  # noqa: BLE001 - not in this build: its namespace is listed in RESERVED_NAMESPACES anyway
            pass
    return frozenset(name.split("::", 1)[0] for name in torch._C._dispatch_get_all_op_names())


def find_custom_ops(tree: ast.Module, resolve: Resolve, functions: set[str]) -> dict[str, CustomOp]:
    """``"namespace.name" -> CustomOp`` for every op registered with a valid literal name in the module."""
    ops: dict[str, CustomOp] = {}

    def add(call: ast.Call, function: str | None) -> None:
        parsed = op_name_problem(_op_name_arg(call))
        if isinstance(parsed, tuple):
            ops[".".join(parsed)] = CustomOp(parsed[0], parsed[1], function if function in functions else None)

    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            for dec in stmt.decorator_list:
                if isinstance(dec, ast.Call) and resolve(dec.func) in REGISTER:
                    add(dec, stmt.name)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if resolve(node.func) in REGISTER and len(node.args) > 1 and isinstance(node.args[1], ast.Name):
            add(node, node.args[1].id)  # custom_op("ns::op", fn, mutates_args=())
        inner = node.func
        if isinstance(inner, ast.Call) and resolve(inner.func) in REGISTER and node.args:
            target = node.args[0]
            add(inner, target.id if isinstance(target, ast.Name) else None)  # custom_op("ns::op", ...)(fn)
    return ops


def custom_op_key(dotted: str) -> str | None:
    """``"ns.name"`` for ``torch.ops.ns.name`` / ``torch.ops.ns.name.default``, else None."""
    parts = dotted.split(".")
    if parts[:2] != ["torch", "ops"] or len(parts) not in (4, 5):
        return None
    if len(parts) == 5 and parts[4] != "default":
        return None
    return f"{parts[2]}.{parts[3]}"


def check_registrations(tree: ast.Module, resolve: Resolve, ops: dict[str, CustomOp], report: Report) -> None:
    """Registration calls name a valid op of the candidate's own; companions refer to one of those ops."""
    own_functions = {op.function for op in ops.values() if op.function}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        called = resolve(node.func)
        if called in REGISTER:
            parsed = op_name_problem(_op_name_arg(node))
            if isinstance(parsed, str):
                report("private-api", node, f"{called}: {parsed}")
        elif called in COMPANIONS:
            target = _op_name_arg(node)
            if isinstance(target, ast.Name) and target.id in own_functions:
                continue
            parsed = op_name_problem(target)
            if isinstance(parsed, str) or ".".join(parsed) not in ops:
                report("private-api", node, f"{called} must name an operator this file registers with "
                       "torch.library.custom_op/triton_op (use `@my_op.register_fake`); remove it")
