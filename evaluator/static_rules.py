"""The tables behind the static checker: which modules, names and torch ops a candidate may use, and why.

Pure decisions over dotted names (``torch.cuda.Stream``, ``torch.nn.functional.relu``) and method names
(``sum``, ``contiguous``); the AST walk that finds those names lives in ``evaluator.static_visitor``.
PyTorch's own op list decides which tensor methods compute (``dir(torch.Tensor)`` that are also in
``dir(torch)``), read lazily from the installed torch so that new ops are covered without edits.
"""

from __future__ import annotations

import functools
import sys
import types
from collections.abc import Iterable

ALLOWED_MODULES = frozenset(
    {
        "torch", "torch.nn", "torch.nn.functional", "torch.utils.cpp_extension", "triton",
        "triton.language", "math", "typing", "dataclasses", "functools", "itertools", "collections",
        "enum", "operator", "__future__", "kernelevo", "kernelevo.cuda",
    }
)  # fmt: skip
_ALLOWED_MODULE_PREFIXES = ("triton.language.", "collections.")
ALLOWED_SUMMARY = (
    "torch, torch.nn, torch.nn.functional, torch.utils.cpp_extension (load_inline), triton, "
    "triton.language, math, typing, dataclasses, functools, itertools, collections, enum, operator, "
    "kernelevo.cuda"
)

# Top-level module -> why a candidate may not import it (anything else unlisted: "not allowed").
_WHY_MODULE = {
    "threading": "starts threads that keep working after the timer stops",
    "_thread": "starts threads that keep working after the timer stops",
    "multiprocessing": "starts processes",
    "concurrent": "starts threads or processes",
    "asyncio": "runs background tasks",
    "subprocess": "starts processes",
    "signal": "installs signal handlers",
    "os": "reaches the process, its environment and the file system",
    "sys": "introspects the interpreter (sys.modules, frames)",
    "gc": "introspects the heap (gc.get_objects can find the reference outputs)",
    "inspect": "introspects the call stack and the harness",
    "traceback": "introspects the call stack",
    "importlib": "imports modules dynamically",
    "builtins": "can patch builtins",
    "types": "builds functions and modules dynamically",
    "weakref": "tracks objects behind the harness's back",
    "ctypes": "calls native code and reads raw memory",
    "cffi": "calls native code and reads raw memory",
    "socket": "does network I/O",
    "urllib": "does network I/O",
    "http": "does network I/O",
    "requests": "does network I/O",
    "ssl": "does network I/O",
    "io": "does file I/O",
    "pathlib": "does file I/O",
    "shutil": "does file I/O",
    "tempfile": "does file I/O",
    "glob": "does file I/O",
    "pickle": "deserialises arbitrary objects",
    "marshal": "loads code objects",
    "shelve": "does file I/O and deserialises objects",
    "time": "reads or patches the clocks the timer uses",
    "timeit": "reads or patches the clocks the timer uses",
    "numpy": "computes on the CPU instead of in your kernel",
    "scipy": "computes on the CPU instead of in your kernel",
    "random": "changes or reads random state",
}

# Dotted-name prefix -> (rule, why). Applies to imports and to attribute chains such as torch.cuda.Stream.
_NAME_RULES: dict[str, tuple[str, str]] = {
    "torch.multiprocessing": ("banned-import", "starts processes"),
    "torch.distributed": ("banned-import", "starts processes and does network I/O"),
    "torch.hub": ("banned-import", "does network and file I/O"),
    "torch.save": ("banned-import", "does file I/O"),
    "torch.load": ("banned-import", "does file I/O"),
    "torch.from_file": ("banned-import", "does file I/O"),
    "torch.serialization": ("banned-import", "does file I/O"),
    "torch.package": ("banned-import", "does file I/O and imports code"),
    "torch.overrides": ("banned-import", "hooks PyTorch's dispatch (lazy or fake tensors)"),
    "torch.testing": ("banned-import", "is test tooling, not kernel code"),
    "torch.profiler": ("banned-import", "introspects the harness's profiling"),
    "torch.autograd.profiler": ("banned-import", "introspects the harness's profiling"),
    "torch.futures": ("banned-import", "runs work asynchronously"),
    "torch.classes": ("banned-import", "loads native code"),
    "triton.testing": ("banned-import", "is benchmarking tooling (timing is the harness's job)"),
    "triton.tools": ("banned-import", "is offline tooling, not kernel code"),
    "torch.compile": ("torch-compute", "lets PyTorch's compiler generate the kernel"),
    "torch.compiler": ("torch-compute", "lets PyTorch's compiler generate the kernel"),
    "torch.jit": ("torch-compute", "lets PyTorch's JIT generate the kernel"),
    "torch.export": ("torch-compute", "lets PyTorch's compiler generate the kernel"),
    "torch.fx": ("torch-compute", "rewrites PyTorch programs instead of writing a kernel"),
    "torch.onnx": ("torch-compute", "exports PyTorch programs instead of writing a kernel"),
    "torch.autocast": ("torch-compute", "changes the precision PyTorch computes in"),
    "torch.amp": ("torch-compute", "changes the precision PyTorch computes in"),
    "torch.cuda.amp": ("torch-compute", "changes the precision PyTorch computes in"),
    "torch.cuda.memory_snapshot": ("introspection", "reads the allocator's state (where other tensors live)"),
    "torch.ops": ("private-api", "calls ATen operators directly"),
    "torch.library": ("private-api", "registers or overrides operators"),
    "triton.runtime": ("private-api", "reaches Triton's runtime internals (drivers, caches, launchers)"),
    "triton.compiler": ("private-api", "reaches Triton's compiler internals"),
    "triton.backends": ("private-api", "reaches Triton's backend internals"),
    "triton.knobs": ("private-api", "changes Triton's global configuration"),
}
_NAME_RULES_LEAVES: frozenset[str] = frozenset()  # filled below: stream/state names are not compute
_STATE = "changes streams, graphs or process-wide device state the harness relies on"
for _name in (
    "torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.streams", "torch.cuda.ExternalStream",
    "torch.cuda.StreamContext", "torch.cuda.set_stream", "torch.Stream", "torch.StreamObjType",
    "torch.cuda.graph", "torch.cuda.graphs", "torch.cuda.CUDAGraph", "torch.cuda.make_graphed_callables",
    "torch.cuda.set_per_process_memory_fraction", "torch.cuda.memory", "torch.cuda.empty_cache",
    "torch.cuda.caching_allocator_alloc", "torch.cuda.caching_allocator_delete", "torch.cuda.set_device",
    "torch.cuda.manual_seed", "torch.cuda.manual_seed_all", "torch.cuda.seed", "torch.cuda.seed_all",
    "torch.cuda.set_rng_state", "torch.cuda.set_rng_state_all", "torch.manual_seed", "torch.seed",
    "torch.random", "torch.set_rng_state", "torch.set_default_dtype", "torch.set_default_device",
    "torch.set_default_tensor_type", "torch.use_deterministic_algorithms",
    "torch.set_deterministic_debug_mode", "torch.set_float32_matmul_precision",
    "torch.set_num_threads", "torch.set_num_interop_threads", "torch.set_flush_denormal",
):  # fmt: skip
    _NAME_RULES[_name] = ("stream-or-state", _STATE)

_NAME_RULES_LEAVES = frozenset(n.rsplit(".", 1)[1] for n, (r, _) in _NAME_RULES.items() if r == "stream-or-state")

# Tensor methods (and torch.* functions of the same names) that allocate, view, cast or describe.
ALLOWED_TENSOR_METHODS = frozenset(
    {
        "view", "view_as", "reshape", "reshape_as", "contiguous", "to", "float", "half", "bfloat16",
        "double", "int", "long", "short", "bool", "byte", "char", "type", "type_as", "cpu", "cuda", "t",
        "transpose", "permute", "unsqueeze", "squeeze", "flatten", "unflatten", "expand", "expand_as",
        "broadcast_to", "stride", "size", "numel", "nelement", "dim", "ndimension", "data_ptr",
        "element_size", "dtype", "device", "new_empty", "new_zeros", "new_ones", "new_full",
        "new_empty_strided", "narrow", "select", "split", "split_with_sizes", "chunk", "tensor_split",
        "unbind", "as_strided", "movedim", "moveaxis", "swapaxes", "swapdims", "detach", "detach_",
        "clone", "copy_", "zero_", "fill_", "get_device", "requires_grad_", "item", "tolist",
    }
)  # fmt: skip
ALLOWED_TORCH_FUNCTIONS = frozenset(
    {
        "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
        "full_like", "finfo", "iinfo", "device", "dtype", "is_tensor", "is_floating_point", "is_complex",
        "is_grad_enabled", "is_inference_mode_enabled", "get_default_dtype", "no_grad", "enable_grad",
        "inference_mode", "set_grad_enabled", "result_type", "promote_types", "can_cast",
        "broadcast_shapes", "broadcast_tensors",
    }
)  # fmt: skip
_EXTRA_COMPUTE_METHODS = frozenset({"repeat", "apply_", "map_", "map2_", "sum_to_size", "backward", "numpy"})
# Method names that do file I/O whatever object they are called on (numpy arrays, storages).
FILE_IO_METHODS = frozenset({"tofile", "fromfile", "save", "load", "from_file"})
# Bases that make a class a tensor subclass (lazy or fake outputs).
TENSOR_BASES = frozenset({"torch.Tensor", "torch.nn.Parameter", "torch.nn.Buffer", "torch.nn.parameter.Parameter",
                          "torch.nn.parameter.Buffer", "torch.nn.parameter.UninitializedParameter"})  # fmt: skip


@functools.lru_cache(maxsize=1)
def module_internals() -> frozenset[str]:
    """Private attributes of nn.Module instances (hook tables, _modules, _call_impl...): never touched."""
    import torch  # local: importing the checker must not import torch

    names = {n for n in vars(torch.nn.Module()) if n.startswith("_")}
    return frozenset(names | {"_call_impl", "_wrapped_call_impl", "_compiled_call_impl", "_apply"})
# torch namespaces whose members are not compute (state is covered by _NAME_RULES).
_TORCH_NON_COMPUTE = ("cuda", "backends", "version", "types", "Tensor", "nn.Parameter", "nn.Buffer",
                      "nn.Module", "autograd.Function", "autograd.function", "utils.cpp_extension")  # fmt: skip


@functools.lru_cache(maxsize=1)
def _torch_tables() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(compute method names, non-callable torch names such as dtypes and submodules, op function names).

    Read from the installed torch itself, so new ops are covered without edits here.
    """
    import torch  # local: importing the checker must not import torch
    import torch.nn.functional as F

    data_types = (torch.dtype, torch.layout, torch.memory_format)
    namespace = vars(torch)
    data = frozenset(n for n, v in namespace.items() if isinstance(v, data_types))
    modules = frozenset(n for n, v in namespace.items() if isinstance(v, types.ModuleType))
    compute = set()
    for name in set(dir(torch.Tensor)) & set(dir(torch)):
        value = namespace.get(name)
        if name.startswith("_") or value is None or name in modules or isinstance(value, (type, *data_types)):
            continue
        compute.add(name)
    functions = {
        n
        for space in (namespace, vars(F))
        for n, v in space.items()
        if callable(v) and not isinstance(v, type) and n[:1].islower() and n not in modules
    }
    functions = (functions | compute) - ALLOWED_TORCH_FUNCTIONS - ALLOWED_TENSOR_METHODS - _NAME_RULES_LEAVES
    return frozenset(compute | _EXTRA_COMPUTE_METHODS), data | modules, frozenset(functions)


def normalise_allow(allow: Iterable[str]) -> frozenset[str]:
    """Op names from ``allow_torch`` entries: ``torch.matmul``, ``matmul``, ``aten.mm``, ``aten.mm.default``."""
    out = set()
    for entry in allow:
        parts = [p for p in entry.strip().split(".") if p]
        if parts[:3] == ["torch", "ops", "aten"]:
            parts = parts[2:]
        if parts[:1] == ["aten"] and len(parts) >= 2:
            out.add(parts[1])
        elif parts:
            out.add(parts[-1])
    return frozenset(out)


def method_computes(name: str, allow: frozenset[str]) -> bool:
    """True when ``tensor.name(...)`` runs a PyTorch compute op (``sum``, ``exp_``), not a view or cast."""
    if name in allow or name in ALLOWED_TENSOR_METHODS or name.startswith("is_"):
        return False
    compute, _, _ = _torch_tables()
    base = name[:-1] if name.endswith("_") else name
    return (name in compute or base in compute) and base not in allow


def torch_computes(dotted: str, *, called: bool, allow: frozenset[str]) -> bool:
    """True when the dotted name is a PyTorch compute op used on the forward path (called or passed)."""
    if dotted in ALLOWED_MODULES:
        return False
    _torch_tables()  # imports torch, so that its submodules are in sys.modules
    if dotted in sys.modules:
        return False  # a module (torch.nn.init) is a namespace, not an op
    if dotted in ("operator.matmul", "operator.imatmul"):
        return "matmul" not in allow
    parts = dotted.split(".")
    if parts[0] != "torch" or len(parts) < 2:
        return False
    last = parts[-1]
    if last in allow:
        return False
    if last in ("forward", "__call__") and len(parts) > 2:
        return called  # torch.nn.Linear.forward(m, x), nn.Module.__call__(m, x): running a torch module
    rest = ".".join(parts[1:])
    if any(rest == p or rest.startswith(p + ".") for p in _TORCH_NON_COMPUTE):
        return parts[1] == "Tensor" and len(parts) == 3 and method_computes(last, allow)
    if len(parts) == 2:
        _, data, _ = _torch_tables()
        if last in ALLOWED_TORCH_FUNCTIONS or last in ALLOWED_TENSOR_METHODS or last in data:
            return False
        return last[:1].islower()
    if last[:1].isupper():
        return called  # building a torch.nn module (or any torch class) inside forward
    return True


def cxx_op_computes(name: str, allow: frozenset[str]) -> bool:
    """True when ``torch::name`` / ``at::name`` in C++ is a PyTorch compute op (softmax, mm, cat...)."""
    if name in allow or name.startswith("is_"):
        return False
    _, _, functions = _torch_tables()
    return name in functions or name.startswith("_")


def classify_name(dotted: str) -> tuple[str, str] | None:
    """(rule, why) when a dotted name is off limits to candidates anywhere in the file, else None."""
    parts = dotted.split(".")
    root = parts[0]
    if root not in ("torch", "triton", "kernelevo"):
        return None
    for part in parts[1:]:
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            return "private-api", f"`{dotted}` is a private internal ({part})"
    for i in range(len(parts), 1, -1):
        hit = _NAME_RULES.get(".".join(parts[:i]))
        if hit is not None:
            return hit
    if root == "torch" and parts[-1] in ("from_file", "save", "load", "tofile", "fromfile"):
        return "banned-import", "does file I/O"
    if parts[:2] == ["torch", "utils"] and parts[2:4] not in (["cpp_extension"], ["cpp_extension", "load_inline"]):
        return "banned-import", "is outside what candidates may use (only cpp_extension.load_inline)"
    if root == "kernelevo" and len(parts) > 1 and parts[1] != "cuda":
        return "banned-import", "is outside what candidates may use (only kernelevo.cuda)"
    return None


def module_allowed(module: str) -> bool:
    """True when ``import module`` is on the candidate allowlist."""
    return module in ALLOWED_MODULES or module.startswith(_ALLOWED_MODULE_PREFIXES)


def why_module(module: str) -> str:
    """A short reason a module is refused (threads, introspection, I/O...)."""
    return _WHY_MODULE.get(module.split(".")[0], "is not on the candidate allowlist")


DANGEROUS_BUILTINS = {
    "eval": "runs code built at run time", "exec": "runs code built at run time",
    "__import__": "imports modules dynamically",
    "compile": "builds code at run time", "open": "does file I/O", "input": "reads standard input",
    "breakpoint": "stops in a debugger", "globals": "introspects module state",
    "locals": "introspects frames", "vars": "introspects objects and modules", "dir": "introspects objects",
    "setattr": "patches attributes by name", "delattr": "deletes attributes by name",
    "exit": "ends the process (a success code would hide a failure)",
    "quit": "ends the process (a success code would hide a failure)",
    "SystemExit": "ends the process (a success code would hide a failure)",
    "id": "keys caches on object identity", "memoryview": "reads raw memory",
}  # fmt: skip
ALLOWED_DUNDERS = frozenset({"__init__", "__call__", "__name__", "__version__", "__qualname__", "__doc__"})
ALLOWED_DUNDER_DEFS = frozenset({"__init__", "__call__", "__post_init__", "__repr__"})
