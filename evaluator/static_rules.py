"""The tables behind the static checker: which modules, names and torch ops a candidate may use, and why.

Pure decisions over dotted names (``torch.cuda.Stream``, ``torch.nn.functional.relu``) and method names
(``sum``, ``contiguous``); the AST walk that finds those names lives in ``evaluator.static_visitor``.
PyTorch's own op list decides which tensor methods compute (``dir(torch.Tensor)`` that are also in
``dir(torch)``), read lazily from the installed torch so that new ops are covered without edits.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
from collections.abc import Iterable

from evaluator import import_policy
from evaluator.static_chains import chain_finding, policy_for, real_module_name

# Where a name comes from and what may be imported: the one table in evaluator.import_policy.
ALLOWED_SUMMARY = import_policy.ALLOWED_SUMMARY

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
    "torch.compile": ("torch-compute", "lets PyTorch's compiler generate the kernel"),
    "torch.compiler": ("torch-compute", "lets PyTorch's compiler generate the kernel"),
    "torch.jit": ("torch-compute", "lets PyTorch's JIT generate the kernel"),
    "torch.export": ("torch-compute", "lets PyTorch's compiler generate the kernel"),
    "torch.fx": ("torch-compute", "rewrites PyTorch programs instead of writing a kernel"),
    "torch.onnx": ("torch-compute", "exports PyTorch programs instead of writing a kernel"),
    "torch.autocast": ("torch-compute", "changes the precision PyTorch computes in"),
    "torch.amp": ("torch-compute", "changes the precision PyTorch computes in"),
    "torch.cuda.amp": ("torch-compute", "changes the precision PyTorch computes in"),
    "torch.cpu.amp": ("torch-compute", "changes the precision PyTorch computes in"),
    "torch.xpu.amp": ("torch-compute", "changes the precision PyTorch computes in"),
    "torch.npu.amp": ("torch-compute", "changes the precision PyTorch computes in"),
    "torch.cuda.jiterator": ("cuda-source", "compiles CUDA code from strings the checker does not scan"),
    "torch.mps.compile_shader": ("cuda-source", "compiles shader code from strings the checker does not scan"),
    "torch.mps.load_metallib": ("cuda-source", "loads compiled shader binaries the checker cannot read"),
    "torch.ops": ("private-api", "calls ATen operators directly"),
    "triton.compile": ("private-api", "compiles IR text the checker cannot read; write a @triton.jit kernel"),
    "triton.runtime": ("private-api", "reaches Triton's runtime internals (drivers, caches, launchers)"),
    "triton.compiler": ("private-api", "reaches Triton's compiler internals"),
    "triton.backends": ("private-api", "reaches Triton's backend internals"),
    "triton.knobs": ("private-api", "changes Triton's global configuration"),
}
# Names under refused namespaces that are inert, so any use is allowed (the rest of the namespace stays refused):
# * autograd Function decorators, which act only under autocast (``torch.autocast`` stays refused, and the harness
#   never enables it): ``torch.amp.custom_fwd(fn, device_type=...)`` / ``torch.cuda.amp.custom_bwd``...
AMP_DECORATORS = frozenset({f"torch.{space}.{leaf}" for space in ("amp", "cuda.amp", "cpu.amp", "xpu.amp", "npu.amp")
                            for leaf in ("custom_fwd", "custom_bwd")})
# * queries that return booleans or device facts: which distributed backends this torch build has (no process
#   group is created), and Triton's active driver's device properties and target (Liger and fla size their grids
#   with them; the rest of triton.runtime stays refused).
INERT_PROBES = frozenset({
    "torch.distributed.is_available", "torch.distributed.is_initialized", "torch.distributed.is_nccl_available",
    "torch.distributed.is_gloo_available", "torch.distributed.is_mpi_available", "torch.distributed.is_ucc_available",
    "torch.distributed.is_xccl_available", "torch.distributed.distributed_c10d.is_xccl_available",
    "torch.distributed.distributed_c10d.is_nccl_available", "torch.distributed.distributed_c10d.is_gloo_available",
    "torch.distributed.distributed_c10d.is_mpi_available", "torch.distributed.distributed_c10d.is_ucc_available",
    "triton.runtime.driver.active.utils.get_device_properties", "triton.runtime.driver.active.get_current_target",
    "triton.runtime.driver.active.get_current_device", "triton.runtime.driver.active.get_active_torch_device",
})  # fmt: skip
# * what acts only on an existing process group: the rank and world-size queries and the tensor collectives. No
#   process group can exist in the verifier: everything that makes one (``init_process_group``, ``new_group``,
#   ``init_device_mesh``, the stores, the ``ProcessGroup`` classes) stays refused with the rest of torch.distributed,
#   and the sandbox has no network. With ``group=None`` each raises ("Default process group has not been
#   initialized"); handed an object of the candidate's own, each only calls that object's methods, the candidate's own
#   code, checked as such. fla's fused cross entropy asks the world size and gathers partial losses only when a caller
#   passes a process group. Not the ``*_object`` collectives: they pickle their arguments.
GROUP_ONLY = frozenset(f"torch.distributed.{leaf}" for leaf in (
    "get_world_size", "get_rank", "all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor",
    "broadcast", "barrier"))
# Owners of those probes: usable only as an alias the checker follows (``utils = triton.runtime.driver.active.utils``
# then ``utils.get_device_properties(0)``), so that every use is judged by its full name.
PROBE_OWNERS = frozenset(p.rsplit(".", 1)[0] for p in INERT_PROBES)
# * queries of PyTorch's own compile, trace and autocast state (a bool or a dtype: nothing is compiled, traced or
#   cast by asking); library code branches on them (``if torch.compiler.is_compiling():``). torch.compile,
#   torch.jit.script/trace and torch.autocast themselves stay refused. Not probe owners: ``torch.jit`` and
#   ``torch.compiler`` may not be aliased or tested as namespaces.
STATE_QUERIES = frozenset({
    "torch.compiler.is_compiling", "torch.compiler.is_dynamo_compiling", "torch.compiler.is_exporting",
    "torch.jit.is_scripting", "torch.jit.is_tracing", "torch.is_autocast_enabled", "torch.get_autocast_dtype",
    "torch.get_autocast_gpu_dtype", "torch.get_autocast_cpu_dtype", "torch.is_autocast_cpu_enabled",
    "torch.is_autocast_cache_enabled",
})  # fmt: skip
# * ``torch.compiler.disable``: a wrapper that makes dynamo leave a function to eager (fla's launchers); it calls
#   nothing when it wraps and compiles nothing (as a decorator it is inert for liveness too).
COMPILER_OPT_OUTS = frozenset({"torch.compiler.disable"})
# * ``record_function``: names a range in a profile (a context manager or a decorator); it computes nothing and reads
#   nothing of the profiler's (the verifier's trace is CUPTI's, below PyTorch's profiler, which never runs). The rest
#   of torch.profiler stays refused.
PROFILE_LABELS = frozenset({"torch.profiler.record_function", "torch.autograd.profiler.record_function"})
INERT_PROBES = INERT_PROBES | STATE_QUERIES | COMPILER_OPT_OUTS | PROFILE_LABELS
_USABLE_INSIDE_REFUSED = AMP_DECORATORS | INERT_PROBES | GROUP_ONLY  # the names above, each usable anywhere
# `from torch.amp import custom_fwd`, `... record_function`, and Triton's tutorials' `from triton.runtime import
# driver`: the name is followed, so each use is judged by its full name (`driver.active.utils.get_device_properties`
# is a probe; anything else of triton.runtime stays refused, the bare `driver` as a value too)
IMPORTABLE_FROM_REFUSED = AMP_DECORATORS | PROFILE_LABELS | frozenset({"triton.runtime.driver"})
# Namespaces of those decorators and probes: allowed in a test (``getattr(torch.npu, "amp", None) is not None``).
PROBED_NAMESPACES = frozenset(a.rsplit(".", 1)[0] for a in AMP_DECORATORS) | PROBE_OWNERS
_NAME_RULES_LEAVES: frozenset[str] = frozenset()  # filled below: stream/state names are not compute
# How the process was seeded is a tell (a verified process is seeded, a user's program often is not), and no kernel
# needs it (``redteam/s7_initial_seed_tell``: a constructor that latched on ``torch.initial_seed() < 2**31``).
_SEED_STATE = "reads how the random generator was seeded or its state, which no kernel needs"
_STATE = "changes streams, graphs or process-wide device state the harness relies on"
# Device backends share one API shape (torch.cuda, torch.xpu, torch.mps, torch.mtia, torch.cpu, torch.accelerator):
# their stream, graph, allocator and RNG members change state; the rest are probes (is_available, properties).
DEVICE_BACKENDS = ("cuda", "xpu", "mps", "mtia", "cpu", "accelerator", "npu")  # npu: torch_npu (Ascend), absent here
_BACKEND_STATE = (
    "Stream", "stream", "streams", "ExternalStream", "StreamContext", "set_stream", "get_stream_from_external",
    "graph", "graphs", "Graph", "CUDAGraph", "XPUGraph", "MTIAGraph", "graph_pool_handle", "make_graphed_callables",
    "set_per_process_memory_fraction", "memory", "empty_cache", "caching_allocator_alloc",
    "caching_allocator_delete", "MemPool", "use_mem_pool", "change_current_allocator", "CUDAPluggableAllocator",
    "XPUPluggableAllocator", "set_device", "set_device_index", "set_device_idx", "manual_seed", "manual_seed_all",
    "seed", "seed_all", "set_rng_state", "set_rng_state_all",
)  # fmt: skip
for _backend in DEVICE_BACKENDS:
    for _leaf in _BACKEND_STATE:
        _NAME_RULES[f"torch.{_backend}.{_leaf}"] = ("stream-or-state", _STATE)
    for _leaf in ("memory_snapshot", "snapshot", "record_memory_history"):
        _NAME_RULES[f"torch.{_backend}.{_leaf}"] = ("introspection", "reads the allocator's state (where other "
                                                    "tensors live)")
    _NAME_RULES[f"torch.{_backend}.profiler"] = ("banned-import", "introspects the harness's profiling")
    for _leaf in ("initial_seed", "get_rng_state", "get_rng_state_all", "default_generators"):
        _NAME_RULES[f"torch.{_backend}.{_leaf}"] = ("introspection", _SEED_STATE)
for _name in (
    "torch.Stream", "torch.StreamObjType", "torch.manual_seed", "torch.seed",
    "torch.random", "torch.set_rng_state", "torch.set_default_dtype", "torch.set_default_device",
    "torch.set_default_tensor_type", "torch.use_deterministic_algorithms",
    "torch.set_deterministic_debug_mode", "torch.set_float32_matmul_precision",
    "torch.set_num_threads", "torch.set_num_interop_threads", "torch.set_flush_denormal",
):  # fmt: skip
    _NAME_RULES[_name] = ("stream-or-state", _STATE)
for _name in ("torch.initial_seed", "torch.get_rng_state", "torch.default_generator"):
    _NAME_RULES[_name] = ("introspection", _SEED_STATE)

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
        "clone", "copy_", "zero_", "fill_", "get_device", "requires_grad_", "item",
    }
)  # fmt: skip
ALLOWED_TORCH_FUNCTIONS = frozenset(
    {
        "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
        "full_like", "finfo", "iinfo", "device", "dtype", "is_tensor", "is_floating_point", "is_complex",
        "is_grad_enabled", "is_inference_mode_enabled", "get_default_dtype", "no_grad", "enable_grad",
        "inference_mode", "set_grad_enabled", "result_type", "promote_types", "can_cast",
        "broadcast_shapes", "broadcast_tensors", "arange",
    }
)  # fmt: skip
# Tensor methods that hand tensor data to Python or numpy, where it can be computed on the host unseen.
HOST_CONVERSION_METHODS = frozenset({"tolist", "numpy", "apply_", "map_", "map2_", "new_tensor", "untyped_storage",
                                     "storage", "_typed_storage"})  # fmt: skip
_EXTRA_COMPUTE_METHODS = frozenset({"repeat", "sum_to_size", "backward"}) | HOST_CONVERSION_METHODS
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
_TORCH_NON_COMPUTE = (*DEVICE_BACKENDS, "backends", "version", "types", "Tensor", "nn.Parameter", "nn.Buffer",
                      "nn.Module", "autograd.Function", "autograd.function", "utils.cpp_extension", "library",
                      "distributed.tensor")  # fmt: skip


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


@functools.lru_cache(maxsize=1)
def tensor_properties() -> frozenset[str]:
    """Tensor attributes that are data, not methods (``x.real``, ``x.T``, ``x.shape``): reading one is no lookup."""
    import torch  # local: importing the checker must not import torch

    return frozenset(n for n in dir(torch.Tensor) if not callable(inspect.getattr_static(torch.Tensor, n, None)))


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
    if dotted in import_policy.POLICIES or dotted in _USABLE_INSIDE_REFUSED:
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


# ATen operators torch exposes under a private name: operators like any other, judged by the torch-compute rule
# (refused on the forward path, lifted where code never runs), not private internals (fla's varlen checks).
PRIVATE_OPS = frozenset({"torch._assert_async"})
# torch's documented checks, underscored for history (the custom-op guide's ``torch._check(cond, msg)``): they raise
# on a false condition and do nothing else.
DOCUMENTED_CHECKS = frozenset({"torch._check", "torch._check_is_size", "torch._check_index", "torch._check_value",
                               "torch._check_type", "torch._check_not_implemented", "torch._check_with"})


def classify_name(dotted: str) -> tuple[str, str] | None:
    """(rule, why) when a dotted name is off limits to candidates anywhere in the file, else None.

    ``dotted`` starts with an imported module (``torch.cuda.Stream``, ``typing.sys.modules``). Names of
    type-only modules (``torch.distributed.tensor.DTensor``) pass here: where they are used decides
    (:func:`type_only_policy`).
    """
    parts = dotted.split(".")
    root = parts[0]
    public = experimental_spelling(dotted)
    if public is not None:
        return classify_name(public)
    real = real_module_name(dotted)
    if real != dotted:  # a module reached through another's re-export is judged by its own name as well
        found_real = classify_name(real)
        if found_real is not None:
            return found_real[0], f"is `{real}` ({found_real[1]})"
    if root in ("torch", "triton", "kernelevo") and dotted not in PRIVATE_OPS | DOCUMENTED_CHECKS:
        for part in parts[1:]:
            if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
                return "private-api", f"`{dotted}` is a private internal ({part})"
    found = chain_finding(dotted)
    if found is not None:
        return found.rule, found.why
    if type_only_policy(dotted) is not None or dotted in _USABLE_INSIDE_REFUSED:
        return None
    for i in range(len(parts), 1, -1):
        hit = _NAME_RULES.get(".".join(parts[:i]))
        if hit is not None:
            return hit
    if root == "torch" and parts[-1] in ("from_file", "save", "load", "tofile", "fromfile"):
        return "banned-import", "does file I/O"
    return None


_EXPERIMENTAL = "_experimental_"


def experimental_spelling(dotted: str) -> str | None:
    """``triton.language.<public>`` when ``dotted`` is ``triton.language._experimental_<public>``, the name an older
    Triton gave a kernel-language function before it became public (``_experimental_make_tensor_descriptor``, Triton
    3.3), and ``<public>`` is a public name of the installed ``triton.language``: the same device-side operation, so
    it is judged as the public name. Only the kernel language, only one level below it, only names that exist
    publicly now; any other private name stays private."""
    parts = dotted.split(".")
    if len(parts) != 3 or parts[:2] != ["triton", "language"] or not parts[2].startswith(_EXPERIMENTAL):
        return None
    public = parts[2][len(_EXPERIMENTAL):]
    if not public or public.startswith("_") or not public.isidentifier():
        return None
    language = sys.modules.get("triton.language")
    if language is None or not isinstance(vars(language).get(public), types.FunctionType):  # no class, no module
        return None
    return f"triton.language.{public}"


def type_only_policy(dotted: str) -> tuple[str, import_policy.ModulePolicy] | None:
    """(module, policy) when ``dotted`` is in a module whose names may only be used as types."""
    found = policy_for(dotted)
    return found if found is not None and found[1].type_only else None


def module_allowed(module: str) -> bool:
    """True when ``import module`` is on the candidate allowlist."""
    if module in import_policy.POLICIES:
        return True
    return any(module.startswith(p + ".") for p in import_policy.OPEN_PACKAGES)


def why_module(module: str) -> str:
    """Why a module is refused, true of that module (threads, introspection, I/O...), as a clause."""
    parts = module.split(".")
    for i in range(len(parts), 1, -1):
        hit = _NAME_RULES.get(".".join(parts[:i]))
        if hit is not None:
            return f"it {hit[1]}"
    found = policy_for(module)
    if found is not None and found[1].why_limited:
        return found[1].why_limited
    return "it " + import_policy.REFUSED_WHY.get(parts[0], "is not on the candidate allowlist")


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
    "id": "keys caches on object identity", "memoryview": "reads raw memory", "help": "introspects objects",
}  # fmt: skip
# Builtins and operator helpers that look names up at run time: legal only called directly, with a literal,
# public attribute name (``getattr(obj, "shape")``), never as values (``g = getattr``, ``partial(getattr, x)``).
LOOKUP_CALLABLES = frozenset({"getattr", "operator.methodcaller", "operator.attrgetter"})
# What getattr(torch, device.type) may be used for: asking a device module about the device (and
# ``with backend.device(d):``, which selects the device for a block and restores it afterwards).
DEVICE_QUERIES = frozenset({
    "is_available", "device_count", "current_device", "get_device_properties", "get_device_name",
    "get_device_capability", "is_bf16_supported", "is_tf32_supported", "is_initialized", "get_arch_list",
    "mem_get_info", "synchronize", "current_stream", "device",
})  # fmt: skip
# Calls that only ask about the installation or the device (version and capability probes).
PROBE_CALLS = DEVICE_QUERIES | {"find_spec", "version", "Version", "parse", "is_built", "is_compiled",
                                "get_capabilities", "current_accelerator", "get_current_target", "get_current_device",
                                "machine", "system", "python_version", "metadata"}
ALLOWED_DUNDERS = frozenset({"__init__", "__call__", "__name__", "__version__", "__qualname__", "__doc__"})
ALLOWED_DUNDER_DEFS = frozenset({"__init__", "__call__", "__post_init__", "__repr__"})
