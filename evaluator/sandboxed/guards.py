"""Runtime guards inside the candidate process: the second line of defence behind the static checks.

Static checks read the source; these watch what the candidate actually does while it is imported
and called: which torch ops ran (the kernel must do the math), whether any kernel launched, whether it
touched files, sockets, processes, frames or the garbage collector (an audit hook), whether it patched
torch/time/triton attributes, and whether it left threads behind. They run in the candidate process,
so they are installed before the candidate is imported and checked after every call.
"""

from __future__ import annotations

import _signal as _signal_module
import builtins
import copyreg
import dis
import enum
import functools
import inspect
import io
import os
import shutil
import signal
import sys
import sysconfig
import threading
import types
from collections.abc import Callable
from pathlib import Path
from types import CodeType, FrameType, MappingProxyType, ModuleType
from typing import Any, cast

import torch
from torch.utils._python_dispatch import TorchDispatchMode

import kernelevo
from evaluator.import_policy import RUNTIME_ONLY_IMPORTS

# Torch ops a candidate may run itself: allocation, views, copies and dtype casts. Everything else is
# math that the candidate's own kernels must do (unless the task's ALLOW_TORCH_OPS lists it).
ALLOWED_ATEN_OPS = frozenset("""
empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like new_zeros ones ones_like new_ones
full full_like new_full fill_ zero_ copy_ _to_copy to clone contiguous detach alias lift_fresh
view _unsafe_view reshape _reshape_alias view_as as_strided expand expand_as t transpose permute unsqueeze
squeeze flatten unflatten select slice narrow split split_with_sizes chunk unbind movedim
sym_size sym_stride sym_numel sym_storage_offset size stride numel dim is_contiguous is_same_size
_local_scalar_dense item resize_ set_ record_stream
""".split())

_STDLIB = tuple(
    str(Path(p).resolve()) for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]}
)
_THIS_FILE = str(Path(__file__).resolve())

# Audit events a candidate may not raise itself (directly or through the standard library).
_BLOCKED_EVENT_PREFIXES = (
    "open", "os.", "subprocess.", "socket.", "ctypes.", "gc.", "sys._getframe", "sys._current_frames",
    "sys.settrace", "sys.setprofile", "sys.addaudithook", "shutil.", "urllib.", "http.", "pty.", "fcntl.",
    "mmap.", "resource.", "signal.", "code.__new__", "function.__new__", "marshal.", "pickle.",
    "cpython.run_", "compile", "exec", "builtins.input", "_thread.", "winreg.",
    "object.__getattr__", "object.__setattr__", "object.__delattr__",  # frames, tracebacks, code, closures
)


def _op_name(func: Any) -> str:
    packet = getattr(func, "overloadpacket", func)
    return str(getattr(packet, "__name__", packet)).split(".")[-1]


def _op_namespace(func: Any) -> str:
    """``aten`` for ATen's ops; the library namespace of a ``torch.library`` op (``mylib`` of ``mylib::op``)."""
    namespace = getattr(func, "namespace", None)
    if isinstance(namespace, str) and namespace:
        return namespace
    name = str(getattr(func, "name", lambda: "")() if callable(getattr(func, "name", None)) else "")
    return name.split("::")[0] if "::" in name else "aten"


_TORCH_DIR = str(Path(torch.__file__).resolve().parent) + "/"


def _package_dir(name: str) -> str:
    try:
        module = __import__(name)
    except ImportError:
        return "<not installed>/"
    if module.__file__ is None:
        raise RuntimeError(f"{name} is installed as a namespace package (no __init__.py at {list(module.__path__)}):"
                           f" reinstall it (pip install --force-reinstall {name})")
    return str(Path(module.__file__).resolve().parent) + "/"


_TRITON_DIR = _package_dir("triton")
_JINJA2_DIR = _package_dir("jinja2")
# The library functions that compile source text of their own and run it (exact call sites; ``exec``/``eval``
# elsewhere in torch or triton may evaluate the candidate's strings, e.g. torch.library.custom_op evaluating string
# annotations): (file, function) -> who must have asked. None: Triton's argument binder, built only from identifiers
# and canonical type names, whoever launches. Jinja's compiled templates: only those torch's own code asked for by
# name (inductor builds its kernel templates from its own strings when torch._inductor is imported, which a
# ``@torch.compile`` decoration does, even of a function that never runs); a template the candidate renders, or
# hands torch as a generic callable (a ``functools.partial`` of ``from_string``), is the candidate's code.
_CODE_GENERATORS = MappingProxyType({
    (str(Path(_TRITON_DIR) / "runtime" / "jit.py"), "create_function_from_signature"): None,
    (str(Path(_JINJA2_DIR) / "environment.py"), "from_code"): (_TORCH_DIR, ("from_string", "get_template")),
})
MAX_DISPATCHES_PER_CALL = 4096  # allocations and views of an honest launcher; element-wise host loops go far past
# Tensor elements a forward may read on the host (``.item()``, ``float(t)``: a launcher reads a size or a flag); a
# host loop over the data reads every one, wherever it runs (a grid callable Triton evaluates included).
MAX_HOST_READS_PER_CALL = 256
# Triton's autotune benchmarking (the only torch work Triton does for itself during a launch) is off the count: its
# benchmark loop, and the driver's cache flush between repetitions (``clear_cache``: a ``zero_`` per repetition, 5,497
# calls for one multi-config autotune on the H200 with Triton 3.6). The ops themselves are still judged.
_BENCHMARK_FILES = frozenset(str(Path(_TRITON_DIR) / name) for name in (
    "testing.py", "runtime/autotuner.py", "backends/nvidia/driver.py", "backends/amd/driver.py"))


# Torch compute on tensors at most 1/SMALL_FRACTION of the call's input elements is bookkeeping (a final mean over
# per-row losses, a check of the targets), reported but allowed; on anything larger it is doing the op's work. The
# kernel trace's judge applies the same fraction to threads launched (evaluator.tracing.judge.BOOKKEEPING_FRACTION).
SMALL_FRACTION = 64


def bookkeeping_elements(inputs: Any) -> int:
    """How many elements a call's torch work may touch and still be bookkeeping (see :data:`SMALL_FRACTION`)."""
    return sum(x.numel() for x in inputs if isinstance(x, torch.Tensor)) // SMALL_FRACTION


class OpRecorder(TorchDispatchMode):
    """Records the torch ops run while the candidate's code runs, wherever they come from: its own Python, Python
    Triton calls back (grid callables, heuristics, autotune and pre-run hooks, helpers called from a jit body),
    and the bodies of its own ``torch.library`` ops (run again under this recorder). The Triton interpreter
    itself needs only allowed ops (copies to and from the host, ``new_empty``, ``set_``), so nothing is exempt.

    Ops are named in full (``ns::op``): only ``aten`` ops can be allowed by name, and the candidate's own ops only
    by their full name. Torch work on small tensors (at most ``small_elements`` each, and at most that many
    elements over the whole call together) is bookkeeping: reported, allowed.

    Everything it needs is bound when it is created (before the candidate is imported): nothing is looked
    up through module attributes while it runs.
    """

    def __init__(self, allowed_extra: tuple[str, ...] = (), own_ops: frozenset[str] = frozenset(),
                 small_elements: int = 0):
        super().__init__()
        self.allowed = ALLOWED_ATEN_OPS | frozenset(a.split(".")[-1] for a in allowed_extra if "::" not in a)
        self.own = frozenset(op for op in own_ops if "::" in op and not op.startswith("aten::"))
        self.violations: list[str] = []
        self.small_ops: list[str] = []  # bookkeeping on small tensors (see ``small_elements``), reported, allowed
        self.dispatches = 0
        self.host_reads = 0  # aten::_local_scalar_dense calls (see MAX_HOST_READS_PER_CALL)
        self._small = int(small_elements)
        self._small_left = int(small_elements)  # the whole call's allowance for bookkeeping
        self._benchmark_files = _BENCHMARK_FILES
        self._max_host_reads = MAX_HOST_READS_PER_CALL
        self._torch_dir = _TORCH_DIR
        self._getframe = sys._getframe
        self._tensor = torch.Tensor
        self._depths: tuple[int, int] = (0, 0)  # (dispatch, function) mode stack depths when entered
        self._dispatch_depth, self._function_depth = _MODE_STACK_DEPTHS
        self._pop_function, self._pop_dispatch = _POP_FUNCTION_MODE, _POP_DISPATCH_MODE
        self._push_dispatch, self._dispatch_at = _PUSH_DISPATCH_MODE, _DISPATCH_MODE_AT

    def __enter__(self) -> OpRecorder:
        self._depths = (self._dispatch_depth(), self._function_depth())
        return super().__enter__()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        """Leave the stacks exactly as they were entered, before any torch call of the harness runs: a mode the
        candidate pushed and left (``SomeMode().__enter__()`` in forward) would otherwise see, and run code
        during, everything the harness does after the call, with no guard active. The recorder taken off the
        stack (``_pop_mode()``) is a violation too."""
        dispatch_depth, function_depth = self._depths
        while self._function_depth() > function_depth:
            self._pop_function()
            self._note_once("a TorchFunctionMode left on the stack")
        while self._dispatch_depth() > dispatch_depth + 1 or (
                self._dispatch_depth() == dispatch_depth + 1 and self._dispatch_at(dispatch_depth) is not self):
            self._pop_dispatch(None)
            self._note_once("a TorchDispatchMode left on the stack")
        if self._dispatch_depth() <= dispatch_depth:
            self._push_dispatch(self)  # put back so that the ordinary exit pops it
            self._note_once("the op recorder taken off the dispatch stack")
        return super().__exit__(exc_type, exc, tb)

    def _note_once(self, what: str) -> None:
        if what not in self.violations:
            self.violations.append(what)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        namespace, name = _op_namespace(func), _op_name(func)
        qualified = f"{namespace}::{name}"
        if qualified in self.own:  # the candidate's own op: OwnOpBodies records its body under this recorder
            return func(*args, **(kwargs or {}))
        result = func(*args, **(kwargs or {}))
        if self._caller_file() not in self._benchmark_files:  # autotune benchmarking is not the candidate's
            self.dispatches += 1
        if namespace == "aten" and name == "_local_scalar_dense":
            self.host_reads += 1
            if self.host_reads > self._max_host_reads:
                self._note_once(f"aten._local_scalar_dense (more than {self._max_host_reads} tensor elements read on "
                                "the host in one call)")
        if namespace == "aten" and name in self.allowed:
            return result
        shown = f"aten.{name}" if namespace == "aten" else qualified
        size = self._elements(args, kwargs, result)
        if self._small and size <= self._small and size <= self._small_left:
            self._small_left -= size
            if shown not in self.small_ops:
                self.small_ops.append(shown)
        elif shown not in self.violations:
            self.violations.append(shown)
        return result

    def _elements(self, args: Any, kwargs: Any, result: Any) -> int:
        """The largest tensor an op read or wrote: a final mean over per-row results is bookkeeping, a softmax
        over the input is the op itself."""
        largest, stack = 0, [args, kwargs or {}, result]
        while stack:
            item = stack.pop()
            if isinstance(item, self._tensor):
                largest = max(largest, item.numel())
            elif isinstance(item, (list, tuple)):
                stack.extend(item)
            elif isinstance(item, dict):
                stack.extend(item.values())
        return largest

    def _caller_file(self) -> str:
        """The file of the nearest caller outside torch (the Triton interpreter itself is exempt from recording:
        it is the kernel running; anything else Triton calls back is the candidate's code)."""
        frame: FrameType | None = self._getframe(2)
        while frame is not None and frame.f_code.co_filename.startswith(self._torch_dir):
            frame = frame.f_back
        return frame.f_code.co_filename if frame is not None else ""


class LaunchCounter:
    """Counts kernel launches through Triton, kernelevo.cuda and load_inline modules."""

    def __init__(self) -> None:
        self.count = 0
        self.foreign_stream_launches = 0  # launches while a stream other than the harness's was current
        self.resources: dict[str, dict[str, int]] = {}  # kernel name -> registers, spills, shared memory
        self.programs = 0  # programs the Triton interpreter ran (CPU): a launch on an empty grid runs none
        self.launching = 0  # launches in progress (programs are counted only inside one)
        self.host_arguments: list[str] = []  # interpreted launches handed a Python object (see kernel_argument_kind)
        self.interpreted = False
        self._installed = False

    def install(self, extension_root: Path | None = None, interpreted: bool = False) -> None:
        if self._installed:
            return
        self._installed = True
        if extension_root is not None:
            from evaluator.sandboxed import inline_ext

            inline_ext.install(self, extension_root)
        for cls in _triton_function_classes():
            self._wrap_method(cls, "run")
        if interpreted:
            self._count_interpreted_programs()
            self._check_interpreted_arguments()
        try:
            import kernelevo.cuda as kcuda

            kernel_cls = getattr(kcuda, "Kernel", None)
            if kernel_cls is not None:
                self._wrap_method(kernel_cls, "__getitem__")
        except Exception:  # the helper is optional (CPU-only installs without cuda-core)
            pass

    def _wrap_method(self, cls: type, name: str) -> None:
        original = cls.__dict__.get(name)
        if original is None:
            return
        counter = self

        def counted(self_, *args, **kwargs):
            counter.count += 1
            counter.foreign_stream_launches += on_foreign_stream()
            counter.launching += 1
            try:
                result = original(self_, *args, **kwargs)
            finally:
                counter.launching -= 1
            counter.note_resources(self_, result)
            return result

        setattr(cls, name, _disguised(counted, original))

    def _count_interpreted_programs(self) -> None:
        """Under the interpreter, count the programs each launch really runs (``set_grid_dim`` receives the
        evaluated grid), so that a launch on an empty grid does not count as work."""
        try:
            from triton.runtime.interpreter import interpreter_builder
        except Exception:  # no Triton, or not the interpreter
            return
        original = getattr(type(interpreter_builder), "set_grid_dim", None)
        if original is None:
            return
        counter = self

        def set_grid_dim(self_: Any, nx: int, ny: int, nz: int) -> Any:
            if counter.launching:  # only the grids of launches this counter saw (not a call from forward itself)
                counter.programs += max(0, int(nx)) * max(0, int(ny)) * max(0, int(nz))
            return original(self_, nx, ny, nz)

        type(interpreter_builder).set_grid_dim = set_grid_dim
        self.interpreted = True
        _pin_interpreted_sources()

    def _check_interpreted_arguments(self) -> None:
        """Under the interpreter, refuse a launch whose arguments (defaults included) are anything a compiled
        kernel could not be handed: the interpreter passes any other Python object into the kernel unchanged, where
        its methods (``obj.softmax(block)``) or a ``tl.reduce`` combine function would run host Python over the
        block's values. A GPU build refuses such arguments itself."""
        try:
            from triton.runtime.interpreter import GridExecutor
        except Exception:  # no Triton, or one without the interpreter
            return
        original = GridExecutor.__dict__.get("__call__")
        if original is None:
            return
        counter = self

        def checked(self_: Any, *args: Any, **kwargs: Any) -> Any:
            fn: Any = getattr(self_, "fn", None)
            constexprs = set(getattr(self_, "constexprs", ()))
            try:
                spec = inspect.getfullargspec(fn)  # as the interpreter does: unknown keywords are dropped
                named = {k: v for k, v in kwargs.items() if k in spec.args or k in spec.kwonlyargs}
                bound = inspect.getcallargs(fn, *args, **named)
            except TypeError:  # the interpreter reports a wrong call itself
                return original(self_, *args, **kwargs)
            kernel = getattr(fn, "__name__", "kernel")
            for name, value in bound.items():
                why = kernel_argument_refusal(value, name in constexprs)
                if why:
                    counter.host_arguments.append(f"kernel `{kernel}` launched with `{name}` = {why}")
                    raise PermissionError(f"kernelevo verifier: kernel `{kernel}` was handed `{name}` = {why}; a "
                                          "Triton kernel takes tensors, numbers, strings, dtypes, jit functions "
                                          "and tuples of them")
            decorated = _DECORATED.get(id(fn))
            for why in kernel_global_refusals(decorated[1] if decorated and decorated[0] is fn else fn)[:1]:
                counter.host_arguments.append(f"kernel `{kernel}` reads {why}")
                raise PermissionError(f"kernelevo verifier: kernel `{kernel}` reads {why}; a Triton kernel reads "
                                      "from its module only constants (numbers, strings, dtypes, tl.constexpr), "
                                      "jit functions and Triton's own modules")
            return original(self_, *args, **kwargs)

        GridExecutor.__call__ = _disguised(checked, original)

    def work_since(self, launches: int, programs: int) -> bool:
        """Whether a kernel did work since the counters read ``launches`` and ``programs``: under the interpreter
        some program must have run (a launch on an empty grid runs none); on a GPU some launch was made (the
        launch record taken below Python is the real proof there)."""
        return self.programs > programs if self.interpreted else self.count > launches

    def note_resources(self, fn: Any, compiled: Any) -> None:
        """Registers, spills and shared memory of a launched kernel (GPU only; the interpreter has none)."""
        name = getattr(fn, "__name__", None) or getattr(fn, "name", None) or "kernel"
        if name in self.resources:
            return
        if not hasattr(compiled, "n_regs"):  # kernelevo.cuda: the kernel reports its own attributes
            report = getattr(fn, "resources", None)
            try:
                if callable(report):
                    self.resources[name] = dict(report())
            except Exception:  # no GPU (CPU compile checks): nothing to report
                pass
            return
        try:
            metadata = getattr(compiled, "metadata", None)
            self.resources[name] = {
                "registers": int(compiled.n_regs),
                "spills": int(compiled.n_spills),
                "shared_bytes": int(getattr(metadata, "shared", 0) or 0),
                "num_warps": int(getattr(metadata, "num_warps", 0) or 0),
            }
        except Exception:  # an attribute that a Triton version lacks: report nothing rather than fail
            pass

    def wrap_extension(self, module: Any) -> Any:
        """A proxy for a load_inline module whose function calls count as launches."""
        counter = self

        class _Counted:
            def __getattr__(self, attr: str) -> Any:
                value = getattr(module, attr)
                if not callable(value):
                    return value

                def call(*args, **kwargs):
                    counter.count += 1
                    counter.foreign_stream_launches += on_foreign_stream()
                    return value(*args, **kwargs)

                return call

        return _Counted()


_KERNEL_SCALARS = (bool, int, float, str, type(None))
_MRO = type.__dict__["__mro__"].__get__
_CLASS_DICT = type.__dict__["__dict__"].__get__
_ENUM_TYPE, _INT_ENUM_MRO, _ENUM_FILE = type(enum.IntEnum), _MRO(enum.IntEnum), enum.__file__
# What an Enum class holds besides its members: data, the enum module's own functions, and C slots that are int's,
# object's or Enum's own (``_value_repr_`` is int.__repr__), never another C function that decides a comparison
_ENUM_DATA = (str, bool, int, list, dict, tuple, type, type(None))
_ENUM_SLOTS = frozenset(id(v) for base in (int, object, enum.Enum, getattr(enum, "ReprEnum", enum.Enum), enum.IntEnum)
                        for v in vars(base).values())


def plain_int_enum(kind: type) -> bool:
    """``kind`` is an ``enum.IntEnum`` class with members only (``ActivationType.GELU`` as a constexpr): made by
    the standard metaclass, and every function it holds the enum module's own, so an int's comparisons, hash and
    conversions run no code of the candidate's when Triton specialises on it."""
    if type(kind) is not _ENUM_TYPE or _MRO(kind)[1:] != _INT_ENUM_MRO:
        return False
    for value in _CLASS_DICT(kind).values():  # exact type tests only: isinstance could read a __class__ property
        kind_of = type(value)
        if kind_of is kind or kind_of in _ENUM_DATA or id(value) in _ENUM_SLOTS:
            continue
        function = value.__func__ if kind_of in (classmethod, staticmethod) else value
        if type(function) is not types.FunctionType or function.__code__.co_filename != _ENUM_FILE:
            return False
    return True


def kernel_argument_refusal(value: Any, constexpr: bool, depth: int = 0) -> str | None:
    """Why ``value`` may not be handed to a kernel run by Triton's interpreter (None: it may). A kernel takes what
    a compiled one could be handed: numbers, strings and None of exactly the builtin types (a subclass carries
    methods of its own; an IntEnum with members only is an int: :func:`plain_int_enum`), torch and Triton dtypes,
    ``tl.constexpr`` of those, the file's jit functions, tuples of those, and for a parameter that is not a
    constexpr a tensor or tensor descriptor, which the interpreter turns into a pointer or a descriptor of its own
    before the kernel sees it. Pure."""
    kind = type(value)
    if kind in _KERNEL_SCALARS or isinstance(value, torch.dtype) or kind in _jit_classes() or plain_int_enum(kind):
        return None
    if kind is tuple and depth < 8:  # exactly a tuple: the interpreter rebuilds a subclass, methods and all
        return next((why for v in value if (why := kernel_argument_refusal(v, constexpr, depth + 1))), None)
    module = getattr(kind, "__module__", "") or ""
    if _triton_own(kind) and kind.__name__ == "constexpr" and depth < 8:
        return kernel_argument_refusal(getattr(value, "value", None), constexpr, depth + 1)
    if _triton_own(kind) and _is_triton_dtype(value):
        return None
    if kind is types.FunctionType and _triton_own(value):
        return None  # one of Triton's own operations (tl.exp as a constexpr): the interpreter runs it on blocks
    if not constexpr and (isinstance(value, torch.Tensor) or hasattr(value, "data_ptr")
                          or module.startswith("triton.tools.tensor_descriptor")):
        return None  # replaced by a pointer (or the interpreter's descriptor) before the kernel runs
    return f"a `{kind.__name__}` object"


_KERNEL_MODULES = ("triton", "math")  # the modules (and their submodules) a kernel may name: tl, libdevice, math
# the builtins a kernel may call: those Triton's compiler gives a meaning, and pure ones on its constants (not eval,
# exec, __import__, open, globals, vars, setattr, type, ...: host Python a compiled kernel can never run)
_KERNEL_BUILTINS = frozenset({"len", "list", "tuple", "range", "float", "int", "bool", "str", "isinstance", "getattr",
                              "hasattr", "print", "min", "max", "abs", "round", "zip", "enumerate", "slice",
                              "ValueError", "AssertionError", "NotImplementedError"})


def kernel_global_refusals(fn: Any) -> list[str]:
    """What the kernel ``fn`` (its Python function), and every jit function of the candidate's it reaches through
    its names, reads from its module, its enclosing scope or the builtins that a compiled kernel could not read
    (empty: nothing). Triton's compiler resolves a kernel's global names when it compiles and refuses a host object
    there (only constants, dtypes, jit functions and its own modules); its interpreter runs the kernel as Python,
    where ``OBJ.softmax(block)`` would run host code over the block's values. A value is judged as a launch argument
    declared constexpr is (:func:`kernel_argument_refusal`), a module only where it is Triton's own or ``math``, a
    builtin by :data:`_KERNEL_BUILTINS`; a kernel that assigns or deletes a global is refused (the compiler refuses
    ``global``). Triton's own jit functions are not walked. Pure (reads the functions' code and namespaces)."""
    refusals: list[str] = []
    seen: set[int] = set()
    todo: list[Any] = [fn]
    while todo:
        item = todo.pop()
        function = item if isinstance(item, types.FunctionType) else getattr(item, "fn", None)
        code = getattr(function, "__code__", None)
        if not isinstance(code, CodeType) or id(function) in seen:
            continue
        seen.add(id(function))
        where = getattr(function, "__name__", "kernel")
        namespace = getattr(function, "__globals__", None) or {}
        read: dict[str, Any] = {}
        names, assigned = _global_names(code)
        refusals += [f"`{name}` (in `{where}`) = a global it assigns (`global` is no kernel's)" for name in assigned]
        for name in names:
            if name in namespace:
                read[name] = namespace[name]
            elif hasattr(builtins, name) and name not in _KERNEL_BUILTINS:
                refusals.append(f"`{name}` (in `{where}`) = a Python builtin a compiled kernel has no meaning for")
        for name, cell in zip(code.co_freevars, getattr(function, "__closure__", None) or ()):
            try:
                read[name] = cell.cell_contents
            except ValueError:  # an empty cell: a NameError when read, as in a compiled kernel
                continue
        for name, value in read.items():
            why = _kernel_global_refusal(value, todo)
            if why:
                refusals.append(f"`{name}` (in `{where}`) = {why}")
    return refusals


def _kernel_global_refusal(value: Any, todo: list[Any]) -> str | None:
    """Why a kernel may not read ``value`` from its module (None: it may); a jit function of the candidate's is
    put on ``todo`` (its own names are judged in turn)."""
    if type(value) in _jit_classes():
        if not _triton_own(value, within="triton"):
            todo.append(value)
        return None
    if isinstance(value, ModuleType):
        name = str(getattr(value, "__name__", ""))
        held = name.split(".")[0] in _KERNEL_MODULES and sys.modules.get(name) is value
        return None if held else f"the module `{name}`"
    if _triton_own(value, within="triton"):  # tl.exp, libdevice's, triton.cdiv (a constexpr function in newer Tritons)
        return None
    if isinstance(value, types.FunctionType):
        return "a Python function, not a jit function"
    return kernel_argument_refusal(value, True)


@functools.cache
def _global_names(code: CodeType) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The global names ``code`` (and the code nested in it) reads, and those it assigns or deletes (read once per
    code object: every launch judges the values again, not the bytecode)."""
    names: list[str] = []
    assigned: list[str] = []
    for instruction in dis.get_instructions(code):
        if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
            names.append(str(instruction.argval))
        elif instruction.opname in ("STORE_GLOBAL", "DELETE_GLOBAL"):
            assigned.append(str(instruction.argval))
    for const in code.co_consts:
        if isinstance(const, CodeType):
            inner_names, inner_assigned = _global_names(const)
            names += inner_names
            assigned += inner_assigned
    return tuple(names), tuple(assigned)


@functools.cache
def _jit_classes() -> tuple[type, ...]:
    return tuple(_triton_function_classes())


def _triton_own(obj: Any, within: str = "triton.language") -> bool:
    """``obj`` (a function, class or jit function) is the one a loaded module of package ``within`` holds under its
    name, wherever a file imported it from, not one that only says so in its ``__module__``."""
    home = str(getattr(obj, "__module__", "") or "")
    module = sys.modules.get(home) if home == within or home.startswith(within + ".") else None
    return module is not None and getattr(module, str(getattr(obj, "__name__", "")), None) is obj


def _is_triton_dtype(value: Any) -> bool:
    try:
        import triton.language as tl
    except Exception:
        return False
    return isinstance(value, tl.dtype)


# id(a kernel's rewritten function) -> (it, the function it was decorated with): the interpreter's rewrite reads
# names of its own (``interpreter_semantic``, put into the kernel's module), so a launch judges what the kernel's
# own code reads (kernel_global_refusals)
_DECORATED: dict[int, tuple[Any, Any]] = {}


def _pin_interpreted_sources() -> None:
    """Under the interpreter, run each kernel from the source on disk of the function it was decorated with.

    Triton's interpreter rewrites a kernel's source at its first launch (``inspect.getsourcelines``, through the
    ``linecache``), not when it is decorated, and caches the result in a class-level dict; the jit object's ``fn``
    and ``rewriter`` are plain attributes. A candidate that rewrote its file, planted a ``linecache`` entry,
    filled ``InterpretedFunction.rewritten_fn`` or swapped ``kernel.fn`` would have the CPU run a kernel the
    checker never saw (and that a GPU never compiles). So the function, its code and its rewriter are recorded at
    decoration; at a launch they must be unchanged, the file's own text is put into the ``linecache`` (read from
    disk, where the candidate's file can no longer be written) and the rewrite is cached here."""
    try:
        from triton.runtime.interpreter import FunctionRewriter, InterpretedFunction
    except Exception:
        return
    import linecache

    original_init, original_rewrite_ast = InterpretedFunction.__init__, FunctionRewriter.rewrite_ast
    created: dict[int, tuple[Any, Any, Any, Any]] = {}  # id(jit object) -> (itself, fn, fn's code, rewriter)
    rewritten: dict[int, Any] = {}
    namespace, cache, read, exists = vars(linecache), linecache.cache, io.open, os.path.isfile
    source_of = inspect.getsourcelines
    triton_dir = _TRITON_DIR

    def init(self_: Any, fn: Any, **kwargs: Any) -> None:
        original_init(self_, fn, **kwargs)
        created[id(self_)] = (self_, fn, getattr(fn, "__code__", None), self_.rewriter)

    def rewrite(self_: Any) -> Any:
        known = created.get(id(self_))
        own = vars(self_)
        fn = own.get("fn")
        if known is None and str(getattr(getattr(fn, "__code__", None), "co_filename", "")).startswith(triton_dir):
            # Triton's own library functions (tl.* helpers) were decorated when triton was imported, before this
            known = created[id(self_)] = (self_, fn, fn.__code__, own.get("rewriter"))
        if known is None or known[0] is not self_ or own.get("fn") is not known[1] or \
                getattr(known[1], "__code__", None) is not known[2] or own.get("rewriter") is not known[3] or \
                getattr(known[3], "fn", None) is not known[1] or "rewrite" in own:
            raise PermissionError("kernelevo verifier: a kernel's function, code or rewriter was replaced after it "
                                  "was decorated; the interpreter runs only the kernel as written")
        if "__wrapped__" in getattr(known[1], "__dict__", {}):  # inspect.getsourcelines unwraps it
            raise PermissionError("kernelevo verifier: a kernel's function wraps another (__wrapped__, as "
                                  "functools.wraps sets it): the interpreter would read that one's source")
        done = rewritten.get(id(self_))
        if done is None:
            filename = getattr(known[2], "co_filename", "")
            if namespace.get("cache") is not cache:
                raise PermissionError("kernelevo verifier: linecache.cache was replaced; the interpreter reads "
                                      "kernel sources through it")
            if isinstance(filename, str) and exists(filename):
                with read(filename, encoding="utf-8") as handle:
                    lines = handle.readlines()
                cache[filename] = (sum(len(line) for line in lines), None, lines, filename)
            try:
                shown, _ = source_of(cast(Any, known[1]))  # what the rewriter reads: from its last `def ` line
            except (OSError, TypeError):
                shown = []
            starts = [line.strip() for line in shown if line.strip().startswith("def") and line.strip()[3:4].isspace()]
            if len(starts) > 1 or any(not line.startswith("def ") for line in starts):
                raise PermissionError("kernelevo verifier: a kernel's source has more than one line beginning "
                                      "with `def` (a string's line), or its own `def` is not followed by a space; "
                                      "the interpreter compiles from the last `def ` line, so it would run another")
            done = rewritten[id(self_)] = original_rewrite_ast(known[3])
            _DECORATED[id(done)] = (done, known[1])
        return done

    InterpretedFunction.__init__ = init
    InterpretedFunction.rewrite = rewrite


def on_foreign_stream() -> bool:
    """True when a CUDA launch now would go to a stream the harness did not call forward on.

    The harness runs on the device's default stream (or a graph-capture stream it opened); work a
    candidate sends to a stream of its own runs outside the timer's events.
    """
    if not torch.cuda.is_initialized() or torch.cuda.is_current_stream_capturing():
        return False
    return torch.cuda.current_stream() != torch.cuda.default_stream()


def _triton_function_classes() -> list[type]:
    classes: list[type] = []
    try:
        from triton.runtime.jit import JITFunction

        classes.append(JITFunction)
    except Exception:
        pass
    try:
        from triton.runtime.interpreter import InterpretedFunction

        classes.append(InterpretedFunction)
    except Exception:
        pass
    return classes


# Reading these gives code objects and defaults (what ``inspect.signature`` needs), never a live frame.
_CODE_ATTRIBUTES = frozenset({"__code__", "__defaults__", "__kwdefaults__", "f_code", "gi_code", "cr_code",
                              "ag_code"})


# Events that hand out live frames (f_back and f_locals are not audited: a frame is the way into the harness).
_FRAME_EVENTS = frozenset({"sys._getframe", "sys._current_frames", "sys._getframemodulename"})
_FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})
# Standard-library files that ask for a frame only to read their caller's module name and return the name
# (TypeVar, namedtuple and Enum's functional API name the module that created them).
_NAME_READERS = frozenset(str(Path(stdlib) / name) for stdlib in _STDLIB
                          for name in ("typing.py", "collections/__init__.py", "enum.py"))
# Standard-library files that build classes from templates of their own (namedtuple's __new__, a dataclass's
# __init__, typing.NamedTuple's bases), filled with identifiers they have validated, and set the special
# attributes of what they generated: not the candidate evaluating a string or patching a function.
_CLASS_BUILDERS = frozenset(str(Path(stdlib) / name) for stdlib in _STDLIB
                            for name in ("collections/__init__.py", "dataclasses.py", "typing.py"))
_FRAME_USERS = ("/warnings.py", "/typing.py", "/typing_extensions.py", "/logging/__init__.py", "/traceback.py",
                "/linecache.py")
# inspect hands frames to whoever asks (currentframe, stack, trace): a library may have it read frames only where the
# library's own code names the function it entered (torch's ``inspect.currentframe()``), never through a callable
# the candidate handed over (``inspect.currentframe`` as a grid: Triton calls ``grid(meta)``, which names nothing).
_NAMED_FRAME_USERS = ("/inspect.py",)
_SIGNATURE = inspect.signature
# Never needed by a library while the candidate's code runs, whoever raises them.
_NEVER_FOR_CANDIDATES = ("socket.", "ctypes.", "gc.", "sys.settrace", "sys.setprofile", "sys.addaudithook",
                         "os.system", "os.kill", "os.fork", "os.forkpty", "pty.", "signal.", "resource.setrlimit",
                         # The environment steers what libraries run later (Triton's $CC, TRITON_INTERPRET,
                         # TRITON_*_PATH, the loader's LD_*), and a thread runs torch outside the op recorder (its
                         # dispatch modes are thread-local): no library needs either while the candidate runs.
                         "os.putenv", "os.unsetenv", "_thread.start_new_thread")
# File-system changes a library may make while the candidate's code is on the stack only where its own code names
# the call (Triton's cache ``with open(tmp, "wb")`` then ``os.replace(tmp, path)``): a ``functools.partial(open,
# mode="w")`` or ``partial(os.open, path, O_CREAT, 0o755)`` handed over as a grid or a hook is entered by a generic
# ``f()`` and names nothing. Event -> the names a library's code would call it by.
_NAMED_WRITES = MappingProxyType({
    "open": ("open",), "os.chmod": ("chmod", "fchmod", "lchmod"), "os.chown": ("chown", "fchown", "lchown"),
    "os.symlink": ("symlink",), "os.link": ("link",), "os.rename": ("rename", "replace", "renames"),
    "os.truncate": ("truncate", "ftruncate"), "os.utime": ("utime",), "os.mkfifo": ("mkfifo",),
    "os.mknod": ("mknod",),
})
# Methods through which the standard library is entered implicitly (a class call, a ``with`` block): the library's
# frame names the class instead.
_IMPLICIT_ENTRIES = frozenset({"__init__", "__new__", "__enter__", "__exit__", "__call__"})
# What installs a signal handler or arms a timer (refused while the candidate runs, see _guard_signal_handlers).
_SIGNAL_SETTERS = ("signal", "setitimer", "alarm", "set_wakeup_fd", "siginterrupt")
# Variables a library may change in a child's environment (torch runs the compiler with LC_ALL=C).
_LOCALE_VARIABLES = ("LC_", "LANG")
# Variables a library records in the environment from its own code, where the candidate cannot steer the write:
# torch's inductor notes where its cache is (``os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir``) when
# ``@torch.compile`` decorates a function, even one that never runs (fla's activation helpers). The variable -> the
# files whose code makes the write. Only inductor reads it; a spawned compiler does not (spawns ignore it).
_LIBRARY_RECORDS = MappingProxyType({
    "TORCHINDUCTOR_CACHE_DIR": frozenset({_TORCH_DIR + "_inductor/runtime/cache_dir_utils.py"}),
})
# kernelevo.cuda's modules, the only library code allowed to call ctypes while a candidate's code is on the stack.
_CUDA_TOOLCHAIN_FILES = frozenset(str(Path(kernelevo.__file__).resolve().parent / name)
                                  for name in ("cuda.py", "_cuda_nvrtc.py", "_cuda_driver.py", "_cuda_args.py"))
_TOOLCHAIN = ("ptxas", "cc", "gcc", "g++", "c++", "clang", "nvcc", "ninja", "ld", "nvlink", "fatbinary", "cicc",
              "cuobjdump", "ldconfig")
# Programs the standard library's ``platform`` module runs to describe the host (``architecture()`` runs
# ``file -b`` on the interpreter, as Triton's launcher build does on some versions): allowed only when a frame of
# platform.py itself spawned them; they read the host's binaries and print a word, inside the sandbox.
_SYSTEM_PROBES = ("file", "uname")
_PLATFORM_FILES = frozenset(str(Path(stdlib) / "platform.py") for stdlib in _STDLIB)
# The toolchain runs only when a library's own code called subprocess by name (Triton's ``check_call([cc, ...])``,
# torch's ``subprocess.run(ninja ...)``): ``functools.partial(subprocess.run, ["gcc", "-wrapper", "/bin/sh,-c,..."])``
# handed to a library as a grid or a hook is entered by a generic ``f()`` and would run any shell command.
_SUBPROCESS_FILES = frozenset(str(Path(stdlib) / "subprocess.py") for stdlib in _STDLIB)


# The module names stored kernels and candidates are imported under (kernelevo.kernel_store.kernel_module_name): a
# candidate importing its own module (or another stored kernel's) by name would reach functions the static checks
# judged never to run.
_OWN_MODULES = "_kernelevo_kernel_"


class AuditGuard:
    """An audit hook that refuses file, network, process, frame and gc access originating in the
    candidate's own code (calls made by torch or triton on its behalf are allowed)."""

    def __init__(self, candidate_file: Path, allowed_imports: frozenset[str], *, scratch: Path | None = None):
        self.candidate_file = str(Path(candidate_file).resolve())
        self._private_root = str(Path(candidate_file).resolve().parent) + os.sep
        self._outbox = self._private_root + "outbox" + os.sep
        # The process's writable folders: its private folder, its home (bound under /home as a drawn account's:
        # evaluator.roles.draw_identity), read now, before any candidate code could change the environment, and
        # in a sandbox its own /tmp (``scratch``: Triton writes the C source of its launcher to a temporary folder).
        home = os.environ.get("HOME", "")
        roots = [str(Path(home).resolve()) + os.sep] if home.startswith(os.sep) else []
        roots += [str(Path(scratch).resolve()) + os.sep] if scratch is not None else []
        self._private_roots = (self._private_root, *(root for root in roots if root != os.sep))
        # shutil and pathlib import for library code paths that never run here (fla's nvcc probe; the static checks
        # accept the import only so): importing them reaches nothing os does not (evaluator.import_policy)
        self.allowed_imports = frozenset(allowed_imports) | RUNTIME_ONLY_IMPORTS
        self.violations: list[str] = []
        self.active = False
        self._busy = threading.local()
        self._getframe = sys._getframe  # bound now: nothing is looked up through modules while guarding
        self._stdlib = _STDLIB
        self._blocked = _BLOCKED_EVENT_PREFIXES
        self.refused_imports: list[str] = []
        # Code that torch or triton compiled from their own strings and ran with ``exec`` (Triton's argument
        # binder, torch.fx's generated forward): run-time compiled, but not the candidate's.
        self._library_code: set[CodeType] = set()
        self._library_dirs = (_TORCH_DIR, _TRITON_DIR)
        self._code_generators = _CODE_GENERATORS
        # Bound now, like everything the hook uses: ``os`` is importable by candidates and its attributes can be
        # rebound without an audit event (``os.devnull = "/some/file"`` must not widen what counts as harmless).
        self._devnull, self._fsdecode = os.devnull, os.fsdecode
        self._realpath, self._basename = os.path.realpath, os.path.basename
        # The environment the platform probes must run with (see _probe_environment_unchanged): os.environ itself is
        # bound (its contents are what a spawn inherits), and the search path and loader variables are copied now.
        self._environ = os.environ
        self._probe_environ = {k: v for k, v in os.environ.items() if k == "PATH" or k.startswith("LD_")}
        # The whole environment a spawned program may inherit (see _spawn_environment_unchanged), and where
        # ``os.environ`` must still be found: rebinding it (``partial(setattr, os, "environ", {...})``) or its
        # ``_data`` would change what Triton reads (``$CC``) without an audit event.
        self._spawn_environ = {k: v for k, v in os.environ.items()
                               if not k.startswith(_LOCALE_VARIABLES) and k not in _LIBRARY_RECORDS}
        self._os_namespace = vars(os)
        self._type_name = type.__dict__["__name__"].__get__
        self._which = shutil.which
        self._this_file = _THIS_FILE

    def install(self) -> None:
        sys.addaudithook(self._hook)
        self._guard_imports_of_loaded_modules()
        self._guard_thread_starts()
        self._guard_signal_handlers()

    def _guard_signal_handlers(self) -> None:
        """Python 3.11 raises no audit event for ``signal.signal`` or ``signal.setitimer``: a handler on a timer
        would run the candidate's code in the middle of the harness's (after forward, with every guard off) and
        be handed the interrupted frame. Installing a handler or arming a timer is refused while the candidate's
        code is on the stack; the handlers and timers are also in the attribute snapshot."""
        import _signal
        import signal

        guard = self

        def refusing(original: Any, name: str) -> Any:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                if guard.active and not getattr(guard._busy, "flag", False):
                    line = guard._candidate_line_above(1)
                    if line is not None:
                        guard.violations.append(f"signal.{name} from {Path(guard.candidate_file).name}:{line}")
                        raise PermissionError(f"kernelevo verifier: candidates may not use signal.{name}")
                return original(*args, **kwargs)

            return _disguised(wrapper, original)

        for name in _SIGNAL_SETTERS:
            original = getattr(_signal, name, None)
            if original is None:
                continue
            wrapped = refusing(original, name)
            for module in (_signal, signal):
                if getattr(module, name, None) is original:
                    setattr(module, name, wrapped)

    def _guard_thread_starts(self) -> None:
        """This Python raises no audit event when a thread starts, and torch's dispatch modes are thread-local: a
        thread runs torch outside the op recorder, and one that ends before forward returns leaves the thread
        census nothing to see. ``_thread.start_new_thread`` (and the names ``threading`` and ``_thread`` keep for
        it) are wrapped to refuse a start while the candidate's code (or code compiled at run time) is anywhere on
        the stack, whoever calls it (``Thread.start`` handed to a library as a callback included)."""
        import _thread

        original = _thread.start_new_thread
        guard = self

        def start_new_thread(function: Any, args: Any, kwargs: Any = None) -> Any:
            if guard.active and not getattr(guard._busy, "flag", False):
                line = guard._candidate_line_above(1)
                if line is not None:
                    guard.violations.append(f"_thread.start_new_thread from {Path(guard.candidate_file).name}:{line}")
                    raise PermissionError("kernelevo verifier: candidates may not start threads")
            return original(function, args) if kwargs is None else original(function, args, kwargs)

        _disguised(start_new_thread, original)
        for module, name in ((_thread, "start_new_thread"), (_thread, "start_new"), (threading, "_start_new_thread")):
            if getattr(module, name, None) is original:
                setattr(module, name, start_new_thread)

    def _candidate_line_above(self, depth: int) -> int | None:
        """The candidate's line nearest above the frame ``depth`` levels up from the caller, if any."""
        frame: FrameType | None = self._caller_frame(depth + 2)
        while frame is not None:
            if self._candidates_frame(frame):
                return frame.f_lineno
            frame = frame.f_back
        return None

    def _guard_imports_of_loaded_modules(self) -> None:
        """The "import" audit event fires only when a module is first loaded, and ``importlib.import_module``
        raises none: importing an already loaded module (gc, ctypes, inspect, all loaded by torch) would pass
        unseen. ``builtins.__import__``, ``importlib.__import__`` and ``importlib.import_module`` are wrapped to
        apply the same allowlist, and to refuse private submodules (``importlib._bootstrap``, ``torch._C``),
        when the candidate's code (or code compiled at run time) is the importer. Defence in depth only: a
        loaded module is also reachable through ``sys.modules``; what such a module could do is refused by the
        audit events above, the static checks refuse the import, and nothing of value is in the process."""
        import importlib

        original_import, original_import_module = builtins.__import__, importlib.import_module
        original_importlib_import = importlib.__import__
        allowed = self.allowed_imports

        def refused(name: object, level: int = 0, fromlist: Any = ()) -> bool:
            if not self.active or not isinstance(name, str) or getattr(self._busy, "flag", False):
                return False
            if not self._candidates_frame(self._caller_frame(3)):
                return False
            root, *rest = name.split(".")
            if root.startswith("_kernelevo_") and not root.startswith(_OWN_MODULES):
                return False  # the candidate's own extension modules (load_inline)
            names = [*rest, *(str(item) for item in fromlist or () if isinstance(item, str))]
            return level > 0 or root not in allowed or any(part.startswith("_") for part in names)

        def refuse(name: str) -> ModuleNotFoundError:
            self.refused_imports.append(name)
            return ModuleNotFoundError(f"kernelevo verifier: module {name!r} is not available to candidates",
                                       name=name)

        def guarded(original: Any) -> Any:
            def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002 (the API)
                if refused(name, level, fromlist):
                    raise refuse(name)
                return original(name, globals, locals, fromlist, level)

            return guarded_import

        def guarded_import_module(name, package=None):
            if refused(name, 1 if str(name).startswith(".") else 0):
                raise refuse(str(name))
            return original_import_module(name, package)

        builtins.__import__ = guarded(original_import)
        importlib.__import__ = guarded(original_importlib_import)
        importlib.import_module = guarded_import_module

    def _hook(self, event: str, args: tuple) -> None:
        if event == "exec" and args and isinstance(args[0], CodeType):
            self._note_library_exec(args[0])
        if not self.active or getattr(self._busy, "flag", False):
            return
        if event == "import":
            root = str(args[0]).split(".")[0]
            if root in self.allowed_imports or (root.startswith("_kernelevo_") and not root.startswith(_OWN_MODULES)):
                return
        elif not event.startswith(self._blocked) or self._harmless(event, args):
            return
        self._busy.flag = True
        try:
            culprit = self._originates_in_candidate()
            if not culprit and event != "import":
                culprit = self._called_back(event, args)
            raised_in = self._raised_in() if culprit and event != "import" else ""
        finally:
            self._busy.flag = False
        if not culprit:
            return
        if event == "import":  # not available here: an honest `try: import x / except ImportError` falls back
            self.refused_imports.append(str(args[0]))
            raise ModuleNotFoundError(f"kernelevo verifier: module {args[0]!r} is not available to candidates",
                                      name=str(args[0]))
        message = f"{event} {_short(args)} from {Path(self.candidate_file).name}:{culprit}{raised_in}"
        self.violations.append(message)
        raise PermissionError(f"kernelevo verifier: candidates may not use {event}")

    def _called_back(self, event: str, args: tuple) -> int | None:
        """A library raised the event, but the candidate's code is further up the stack: a library calling back
        what the candidate handed it (a ``functools.partial`` as a grid or a pre-run hook) must not become a
        way around the hook. Only what libraries need while a kernel launches stays allowed: frames for
        ``warnings``/``typing``, writes under the candidate's own folder (compile caches), the toolchain
        (ptxas, the C compiler, ninja). Returns the candidate's line, or None."""
        line = self._candidate_line_on_stack()
        if line is None:
            return None
        if event in _FRAME_EVENTS or (event == "object.__getattr__" and len(args) > 1 and args[1] in _FRAME_ATTRIBUTES):
            caller = self._immediate_caller()
            # The standard library reads frames in its own code (``sys._getframe(1)``, ``frame.f_back``), never
            # through a callable the candidate planted on an object it reads (a ``__signature__`` property that
            # is a ``functools.partial(sys._getframe)``, called from inspect.py's frame for torch).
            if caller.endswith(_NAMED_FRAME_USERS):
                return None if self._names_itself(event, args) and self._called_by_name() else line
            trusted = caller == _THIS_FILE or (caller.endswith(_FRAME_USERS) and self._names_itself(event, args)) \
                or caller.startswith(_TORCH_DIR)
            # Triton reading frames itself (``filter_traceback`` walks ``tb.tb_frame`` of a compile error): its own
            # code names what it reads; a callable the candidate handed it (attrgetter, partial) does not.
            trusted = trusted or (caller.startswith(self._library_dirs) and self._names_itself(event, args))
            return None if trusted else line  # torch's registration code reads its caller's module name
        if event == "open":
            path = args[0] if args else None
            if isinstance(path, int):
                return None  # a descriptor already open: its opening was judged
            if isinstance(path, (str, bytes)):
                path = self._realpath(self._fsdecode(path))
                # a root itself: ``tempfile.NamedTemporaryFile(dir=...)`` opens the folder with an opener that
                # creates the file in it (that opening is its own event, judged on its own path)
                inside = (path + os.sep).startswith(self._private_roots) and not self._harness_path(path)
                return None if inside and self._entered_by_name(_NAMED_WRITES["open"]) else line
            return line
        if event in _NAMED_WRITES:  # chmod, symlink, rename...: only where the library's own code calls them
            return None if self._entered_by_name(_NAMED_WRITES[event]) and not self._names_harness_file(args) \
                else line
        if event in ("object.__setattr__", "object.__delattr__"):  # a type's attribute, a function's code
            wanted = (str(args[1]), "setattr", "delattr") if len(args) > 1 else ("setattr", "delattr")
            return None if self._entered_by_name(wanted) else line
        if event in ("subprocess.Popen", "os.posix_spawn", "os.exec"):
            program = args[0] if args else ""
            name = self._basename(self._fsdecode(program)) if isinstance(program, (str, bytes)) else ""
            if (name.startswith(_TOOLCHAIN) and self._raised_under(_SUBPROCESS_FILES)
                    and self._spawn_trusted(program, args)) or (
                    name in _SYSTEM_PROBES and self._raised_under(_PLATFORM_FILES)
                    and self._probe_environment_unchanged(args)):
                return None
            return line
        if event == "os.putenv" and args and self._fsdecode(args[0]) in _LIBRARY_RECORDS:
            # only where that library's file makes the write and was entered by name (not a partial handed over)
            return None if self._raised_under(_LIBRARY_RECORDS[self._fsdecode(args[0])]) else line
        if event.startswith("ctypes.") and self._entered_through_toolchain():
            return None  # kernelevo.cuda compiling (NVRTC) and launching (driver) what the candidate asked for
        if event.startswith(_NEVER_FOR_CANDIDATES):
            return line
        return None  # compiling and executing source (Triton's JIT and interpreter), file housekeeping: libraries'

    def _note_library_exec(self, code: CodeType) -> None:
        """Remember ``code`` (and the functions it defines) when one of :data:`_CODE_GENERATORS` called exec."""
        frame = self._caller_frame(3)  # 1: here, 2: the hook, 3: the frame that called exec
        if frame is None:
            return
        key = (frame.f_code.co_filename, frame.f_code.co_name)
        if key not in self._code_generators:
            return  # torch evaluates strings that come from user objects too (custom_op's string annotations)
        requester = self._code_generators[key]
        if requester is not None and not self._asked_by_name(frame, *requester):
            return
        pending = [code]
        while pending:
            item = pending.pop()
            self._library_code.add(item)
            pending.extend(c for c in item.co_consts if isinstance(c, CodeType))

    def _asked_by_name(self, frame: FrameType, library: str, names: tuple[str, ...]) -> bool:
        """Whether the first frame above the generator's own package (walking up from ``frame``) is ``library``'s
        code naming one of ``names`` in its own code (torch's ``env.from_string(source)``), with no candidate
        frame in between."""
        package = str(Path(frame.f_code.co_filename).parent) + os.sep
        caller: FrameType | None = frame
        while caller is not None and caller.f_code.co_filename.startswith(package):
            if self._candidates_frame(caller):
                return False
            caller = caller.f_back
        return caller is not None and caller.f_code.co_filename.startswith(library) and \
            not self._candidates_frame(caller) and any(name in caller.f_code.co_names for name in names)

    def _candidates_frame(self, frame: FrameType | None) -> bool:
        """A frame of the candidate's own code: its file, or code compiled at run time from a string that no
        library compiled for itself (``eval``/``exec``, even when a library called the builtin on the candidate's
        behalf, e.g. ``functools.partial(eval, ...)`` handed to Triton as a grid)."""
        if frame is None:
            return False
        filename = frame.f_code.co_filename
        if filename == self.candidate_file:
            return True
        return (filename.startswith("<") and not filename.startswith("<frozen")
                and frame.f_code not in self._library_code)

    def _caller_frame(self, depth: int) -> FrameType | None:
        """The frame ``depth`` levels up from this method (1: its caller), looked up without the lookup's own
        audit event being judged."""
        flag = getattr(self._busy, "flag", False)
        self._busy.flag = True
        try:
            return self._getframe(depth)
        finally:
            self._busy.flag = flag

    def _caller_file(self, depth: int) -> str:
        """The file of the frame ``depth`` levels up from this method (1: its caller)."""
        frame = self._caller_frame(depth + 1)
        return frame.f_code.co_filename if frame is not None else ""

    def _entered_through_toolchain(self) -> bool:
        """Whether, walking up from the event, a frame of kernelevo.cuda comes before any of the candidate's:
        the event is the toolchain's work (NVRTC and the driver, through cuda-python and ctypes) on the
        candidate's request. An object of the candidate's that the toolchain calls back (a fake tensor's
        ``data_ptr``) puts the candidate's frame first, and is refused."""
        frame: FrameType | None = self._getframe(3)
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename in _CUDA_TOOLCHAIN_FILES:
                return True
            if self._candidates_frame(frame):
                return False
            frame = frame.f_back
        return False

    def _raised_under(self, files: frozenset[str]) -> bool:
        """Whether, walking up from the event, a frame of one of ``files`` comes before any of the candidate's, and
        the code that entered those files names the function it entered in its own code (the library's own
        ``platform.architecture()``): a ``functools.partial(platform.architecture, path)`` the candidate hands a
        library as a grid or a hook is entered by a generic ``f()``, which names nothing."""
        frame: FrameType | None = self._getframe(3)
        entered: FrameType | None = None  # the outermost frame of ``files`` so far
        while frame is not None:
            if self._candidates_frame(frame):
                return False
            if frame.f_code.co_filename in files:
                entered = frame
            elif entered is not None:  # ``subprocess.Popen(...)`` enters through ``Popen.__init__``
                name = "Popen" if entered.f_code.co_name == "__init__" else entered.f_code.co_name
                return name in frame.f_code.co_names
            frame = frame.f_back
        return False

    def _entered_by_name(self, names: tuple[str, ...]) -> bool:
        """Whether the library frame nearest to the event (walking up past the standard library) names, in its own
        code, the function it called: one of ``names`` when it called the builtin itself (``open(...)``), else the
        standard-library function it entered (``tempfile.mkstemp``; for a class call or a ``with`` block, the
        class). A callable the candidate handed over (``partial(open, mode="w")`` as a grid, a hook, a
        ``tree_map`` function) is entered by a generic ``f(x)`` and names none (called from :meth:`_called_back`,
        like :meth:`_names_itself`)."""
        frame: FrameType | None = self._getframe(3)  # 0: here, 1: _called_back, 2: the hook, 3: the event's frame
        entered: FrameType | None = None  # the outermost standard-library frame so far
        while frame is not None:
            filename = frame.f_code.co_filename
            if self._candidates_frame(frame):
                return False
            if filename == self._this_file:
                return True  # the guards' own wrappers
            if filename.startswith("<frozen") or (filename.startswith(self._stdlib) and "-packages" not in filename):
                entered, frame = frame, frame.f_back
                continue
            if entered is None:
                return any(name in frame.f_code.co_names for name in names)
            return self._entry_name(entered) in frame.f_code.co_names
        return False

    def _harness_path(self, path: str) -> bool:
        """The candidate's own file (the interpreter reads kernels from it) and the outbox (outputs handed over as
        files, which the reference reads later): written by the harness only, never while the candidate runs."""
        return path == self.candidate_file or path.startswith(self._outbox)

    def _names_harness_file(self, args: tuple) -> bool:
        """Whether an event's path arguments name one of the harness's files (see :meth:`_harness_path`)."""
        return any(isinstance(value, (str, bytes)) and self._harness_path(self._realpath(self._fsdecode(value)))
                   for value in args[:2])

    def _spawn_trusted(self, program: Any, args: tuple) -> bool:
        """A toolchain program may run only from outside the candidate's writable folder and with the environment
        the guard was installed with (locale variables aside): a planted ``gcc`` there, ``$CC``, ``$PATH``,
        ``$LD_PRELOAD`` or ``$COMPILER_PATH`` pointed at it would run the candidate's own program."""
        if not isinstance(program, (str, bytes)) or self._os_namespace.get("environ") is not self._environ:
            return False
        if not self._spawn_environment_unchanged(args):
            return False
        name = self._fsdecode(program)
        if os.sep not in name:  # looked up on PATH by exec (torch runs ``ninja`` by name)
            env = args[3] if len(args) > 3 and args[3] is not None else self._environ
            search = next((self._fsdecode(v) for k, v in list(env.items()) if k in ("PATH", b"PATH")), "")
            found = self._which(name, path=search)
            if found is None:
                return True  # nothing to run: the spawn fails on its own
            name = found
        return not self._realpath(name).startswith(self._private_roots)

    def _spawn_environment_unchanged(self, args: tuple) -> bool:
        env = args[3] if len(args) > 3 and args[3] is not None else self._environ
        try:
            items = list(env.items())
        except (AttributeError, TypeError):
            return False
        current = {}
        for key, value in items:
            if type(key) is bytes:
                key = self._fsdecode(key)
            if type(value) is bytes:
                value = self._fsdecode(value)
            if type(key) is not str or type(value) is not str:
                return False
            if not key.startswith(_LOCALE_VARIABLES) and key not in _LIBRARY_RECORDS:
                current[key] = value
        return current == self._spawn_environ

    def _probe_environment_unchanged(self, args: tuple) -> bool:
        """Whether the program search path and the loader variables the probe runs with are those of the process
        when the guard was installed: a candidate that put its own folder on ``PATH`` (an executable ``file`` it
        wrote there) or set ``LD_PRELOAD`` would have the standard library run its program."""
        env = args[3] if len(args) > 3 and args[3] is not None else self._environ
        try:
            current = {k: v for k, v in env.items() if k == "PATH" or str(k).startswith("LD_")}
        except (AttributeError, TypeError):
            return False
        return current == self._probe_environ

    def _candidate_line_on_stack(self) -> int | None:
        frame: FrameType | None = self._getframe(3)
        while frame is not None:
            if self._candidates_frame(frame):
                return frame.f_lineno
            frame = frame.f_back
        return None

    def _entry_name(self, frame: FrameType) -> str:
        """The name a caller's code uses to enter ``frame``'s function: its own name, or for a class call or a ``with``
        block (``__init__``, ``__enter__``...) the class's."""
        name = frame.f_code.co_name
        if name not in _IMPLICIT_ENTRIES:
            return name
        owner = frame.f_locals.get("self", frame.f_locals.get("cls"))
        kind = owner if issubclass(type(owner), type) else type(owner)  # no isinstance: it reads __class__
        return self._type_name(kind)

    def _called_by_name(self) -> bool:
        """Whether every Python frame from the one that raised the event up to the first library frame was called by
        name from the frame above it (called from :meth:`_called_back`). A callable the candidate planted where the
        standard library calls it implicitly (a ``__signature__`` property that is ``functools.partial(list.extend,
        map(inspect.stack, [0]))``, read by inspect.py for torch) makes a hop no frame names: ``stack`` is then
        called from inspect's ``_signature_from_callable``, whose code never says ``stack``."""
        frame: FrameType | None = self._getframe(3)  # 0: here, 1: _called_back, 2: the hook, 3: the event's frame
        while frame is not None:
            caller = frame.f_back
            if caller is None or self._candidates_frame(caller):
                return False
            name = frame.f_code.co_name
            if name.startswith("<") and name.endswith("comp>") or name == "<genexpr>":
                named = caller.f_code.co_filename == frame.f_code.co_filename  # a comprehension of its own code
            else:
                named = self._entry_name(frame) in caller.f_code.co_names
            if not named:
                return False
            filename = caller.f_code.co_filename
            if not (filename.startswith("<frozen") or (filename.startswith(self._stdlib)
                                                       and "-packages" not in filename)):
                return True  # the library that asked, by name
            frame = caller
        return False

    def _names_itself(self, event: str, args: tuple) -> bool:
        """Whether the Python frame that raised a frame event names the attribute or function in its own code
        (called from :meth:`_called_back`, like :meth:`_immediate_caller`)."""
        frame = self._getframe(3)  # 0: here, 1: _called_back, 2: the hook, 3: the frame that raised the event
        wanted = str(args[1]) if event == "object.__getattr__" else event.rsplit(".", 1)[-1]
        return frame is not None and wanted in frame.f_code.co_names

    def _raised_in(self) -> str:
        """Where library code raised an event on the candidate's behalf (`` (in torch/cuda/__init__.py:950)``: the
        innermost torch or Triton frame, else the frame that raised it), so that a refusal at a kernel launch names
        the library code that did it; empty when the candidate's own code raised it."""
        # 0: here, 1: the hook, 2: the code that raised the event (the hook is busy: the frame reads here raise
        # events that it lets through)
        raiser: FrameType | None = self._getframe(2)
        frame = raiser
        while frame is not None and frame.f_code.co_filename != self.candidate_file \
                and not frame.f_code.co_filename.startswith(self._library_dirs):
            frame = frame.f_back
        if frame is None or frame.f_code.co_filename == self.candidate_file:
            frame = raiser  # no torch or Triton frame below the candidate's: the raiser itself
        if frame is None or frame.f_code.co_filename == self.candidate_file:
            return ""
        path = frame.f_code.co_filename
        for root in self._library_dirs:
            if path.startswith(root):
                path = self._basename(root.rstrip(os.sep)) + os.sep + path[len(root):]  # roots end with a separator
                break
        return f" (in {path}:{frame.f_lineno})"

    def _immediate_caller(self) -> str:
        """The file of the Python frame that raised the event (the guards' own frames are trusted)."""
        frame = self._getframe(3)
        return frame.f_code.co_filename if frame is not None else ""

    def _harmless(self, event: str, args: tuple) -> bool:
        """Events that expose nothing of the harness: reading code objects (``inspect.signature``), reading
        files (the sandbox holds nothing of value), and typing asking for its caller's module name
        (``TypeVar``, ``NamedTuple``: ``typing._caller`` reads ``f_globals['__name__']`` and hands out no frame)."""
        if event in _FRAME_EVENTS:
            return self._caller_file(3) in _NAME_READERS
        if event in ("compile", "exec", "object.__setattr__") and self._caller_file(3) in _CLASS_BUILDERS:
            return True  # namedtuple / dataclass building a class from its own template
        if event == "object.__getattr__":
            return len(args) > 1 and args[1] in _CODE_ATTRIBUTES
        if event == "open" and args:
            # Reading is harmless in the sandbox: the candidate's view holds the system, the installed packages and
            # its own folder, nothing of value (importlib.metadata.version reads a METADATA file, warnings the
            # candidate's own source). Writing stays refused, except to /dev/null (Triton builds its launcher
            # with ``subprocess.check_call(cc, stdout=DEVNULL)`` at a kernel's first launch on the GPU).
            if isinstance(args[0], (str, bytes)) and self._fsdecode(args[0]) == self._devnull:
                return True
            mode = args[1] if len(args) > 1 and isinstance(args[1], str) else "r"
            flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
            return not any(c in mode for c in "wax+") and not flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
        return False

    def _originates_in_candidate(self) -> int | None:
        """The candidate's line when the nearest caller that is not the standard library is the candidate's
        own code, or code compiled at run time (``eval``/``exec`` of a string, even when a library called the
        builtin on the candidate's behalf, e.g. ``functools.partial(eval, ...)`` handed to Triton as a grid);
        None when it is a library (torch, triton acting for the candidate) or the import machinery."""
        frame: FrameType | None = self._getframe(2)
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename == self.candidate_file:
                return frame.f_lineno
            if filename.startswith("<frozen importlib"):
                return None  # the import machinery: governed by the "import" event
            if self._candidates_frame(frame):
                return frame.f_lineno  # compiled at run time from a string the candidate handed over
            stdlib = filename.startswith("<frozen") or (filename.startswith(self._stdlib)
                                                        and "-packages" not in filename)
            if not stdlib and filename != _THIS_FILE:
                return None  # the nearest non-stdlib caller is a library (torch, triton): allowed
            frame = frame.f_back
        return None


def _is_stdlib(filename: str) -> bool:
    return filename.startswith(_STDLIB) and "-packages" not in filename


def _short(args: tuple) -> str:
    text = repr(args)
    return text if len(text) < 80 else text[:77] + "..."


_WATCHED_MODULES = ("_thread", "threading", "_signal", "signal",  # functions the guard wraps (AuditGuard.install)
                    "inspect", "linecache",  # the interpreter reads kernels' sources through them
                    "torch", "torch.nn.functional", "torch.cuda", "torch.nn", "time", "math", "triton",
                    "triton.language", "triton.testing", "torch.backends.cuda", "torch.backends.cudnn",
                    "triton.runtime.jit", "triton.runtime.interpreter", "torch.utils._python_dispatch",
                    "torch.utils.cpp_extension", "kernelevo", "kernelevo.cuda",
                    # the harness itself: a candidate that replaces what the harness calls is caught here too
                    "evaluator.sandboxed.entry", "evaluator.sandboxed.candidate", "evaluator.sandboxed.guards",
                    "evaluator.sandboxed.handoff", "evaluator.sandboxed.bounds", "evaluator.sandboxed.timing",
                    "evaluator.sandboxed.timing_ops", "evaluator.sandboxed.output_checks",
                    "evaluator.sandboxed.taskspec", "evaluator.sandboxed.inline_ext", "evaluator.sandboxed.vmm",
                    "evaluator.sandboxed.wire",
                    "evaluator.tracing.client")
_WATCHED_CLASSES = (("triton.runtime.jit", "JITFunction"), ("triton.runtime.interpreter", "InterpretedFunction"),
                    ("triton.runtime.interpreter", "FunctionRewriter"),
                    ("triton.runtime.interpreter", "InterpreterBuilder"),
                    ("triton.runtime.interpreter", "GridExecutor"), ("triton.runtime.autotuner", "Autotuner"),
                    ("torch.utils._python_dispatch", "TorchDispatchMode"))

class OwnOpBodies:
    """The bodies of the candidate's ``torch.library`` ops, run under the recorder of the call in progress.

    PyTorch runs a custom op's implementation with dispatch modes popped, so the torch work inside it would go
    unseen; the registration functions are wrapped (before the candidate is imported) so that every function the
    candidate registers enters the active recorder itself when it runs: the function handed to ``custom_op`` /
    ``triton_op``, and every kernel registered on the way in (``Library.impl``, which ``op.register_kernel("cpu")``,
    ``torch.library.impl`` and ``register_kernel`` all end in, and torch_dispatch rules)."""

    def __init__(self) -> None:
        self.active: list[Any] = [None]  # the recorder of the call in progress (set by the harness)

    def install(self) -> None:
        library = getattr(torch, "library", None)
        for name in ("custom_op", "triton_op"):
            original = getattr(library, name, None)
            if original is not None:
                setattr(library, name, self._registering(original))
        library_cls = getattr(library, "Library", None)
        for name, position in (("impl", 1), ("_register_torch_dispatch_rule", 2)):
            original = getattr(library_cls, name, None)
            if original is not None:
                setattr(library_cls, name, self._registering_kernel(original, position))

    def _entering(self, fn: Any) -> Any:
        """``fn`` entering the active recorder when it runs, unless the recorder is on the dispatch stack already
        (an autograd kernel runs above the Python key, the device kernel below it with the modes popped)."""
        active, on_stack = self.active, _on_dispatch_stack

        @functools.wraps(fn)
        def body(*a: Any, **k: Any) -> Any:
            recorder = active[0]
            if recorder is None or on_stack(recorder):
                return fn(*a, **k)
            with recorder:
                return fn(*a, **k)
        return body

    def _registering_kernel(self, original: Any, position: int) -> Any:
        entering = self._entering

        def register(lib: Any, *args: Any, **kwargs: Any) -> Any:
            if len(args) > position and callable(args[position]):  # position: of ``fn`` after ``self``
                args = (*args[:position], entering(args[position]), *args[position + 1:])
            elif callable(kwargs.get("fn")):
                kwargs["fn"] = entering(kwargs["fn"])
            return original(lib, *args, **kwargs)

        return _disguised(register, original)

    def _registering(self, original: Any) -> Any:
        entering = self._entering

        def register(*args: Any, **kwargs: Any) -> Any:
            def wrap(fn: Any) -> Any:
                return entering(fn)

            if len(args) > 1 and callable(args[1]) or kwargs.get("fn") is not None:  # custom_op(name, fn, ...)
                args = (args[0], wrap(args[1]), *args[2:]) if len(args) > 1 else args
                if kwargs.get("fn") is not None:
                    kwargs["fn"] = wrap(kwargs["fn"])
                return original(*args, **kwargs)
            decorator = original(*args, **kwargs)
            return lambda fn: decorator(wrap(fn))

        return _disguised(register, original)


# Host-side conversions a candidate could use to do the math in Python instead of a kernel. None of them reaches
# the dispatcher with the data (``_local_scalar_dense``, which the host-read cap counts): ``__dlpack__`` hands numpy a
# view of the memory (``np.from_dlpack``), ``__reduce_ex__`` is what ``pickle.dumps`` and ``copy.copy`` call.
# ``__repr__``/``__str__``/``__format__`` too: printing runs under torch's ``_disable_current_modes()``, so the op
# recorder and its host-read cap never see the values a candidate parses back out of ``str(x)`` (with
# ``torch.set_printoptions(precision=10)`` the text is exact).
HOST_CONVERSIONS = ("numpy", "tolist", "apply_", "map_", "map2_", "__array__", "__dlpack__", "__reduce_ex__",
                    "__repr__", "__str__", "__format__")
# Functions and storage methods that hand out a tensor's bytes the same way (module or class, attribute): DLPack
# capsules, ``torch.save`` into an in-memory buffer, a storage pickled or written to a file object.
HOST_EXPORTS = (("torch", "to_dlpack"), ("torch.utils.dlpack", "to_dlpack"), ("torch", "save"),
                ("torch.serialization", "save"), ("torch.UntypedStorage", "__reduce__"),
                ("torch.UntypedStorage", "_write_file"), ("torch.TypedStorage", "__reduce__"),
                ("torch.TypedStorage", "_write_file"))


class HostConversionGuard:
    """Refuses tensor -> Python/numpy conversions made by the candidate's own code while it is guarded
    (``.numpy()``, ``.tolist()``, ``.apply_()``, DLPack, pickling, ``torch.save`` into memory...: math done on the
    host never reaches the dispatcher or the GPU). Libraries converting on the candidate's behalf are allowed."""

    def __init__(self, audit: AuditGuard):
        self._audit = audit
        self.violations: list[str] = []

    def install(self) -> None:
        for name in HOST_CONVERSIONS:
            original = getattr(torch.Tensor, name, None)
            if original is None:
                continue
            setattr(torch.Tensor, name, self._guarded(f"Tensor.{name}()", original))
        for owner_name, name in HOST_EXPORTS:
            owner = _resolve(owner_name)
            original = getattr(owner, name, None) if owner is not None else None
            if original is not None:
                setattr(owner, name, self._guarded(f"{owner_name}.{name}()", original))

    def _guarded(self, what: str, original: Any) -> Any:
        guard = self

        def method(*args: Any, **kwargs: Any) -> Any:
            audit = guard._audit
            if audit.active and not getattr(audit._busy, "flag", False):
                audit._busy.flag = True  # the frame lookup below is the guard's, not the candidate's
                try:
                    line = audit._originates_in_candidate()
                finally:
                    audit._busy.flag = False
                if line:
                    guard.violations.append(f"{what} at {Path(audit.candidate_file).name}:{line}")
                    raise PermissionError(f"kernelevo verifier: {what} moves tensor data to the host; "
                                          "the kernels must do the math")
            return original(*args, **kwargs)

        return _disguised(method, original)


def _resolve(dotted: str) -> Any:
    """A loaded module, or a class in one (``torch.UntypedStorage``), by its dotted name; None if absent."""
    module_name, _, attribute = dotted.rpartition(".")
    if dotted in sys.modules:
        return sys.modules[dotted]
    return getattr(sys.modules.get(module_name), attribute, None) if module_name else None


class _Watched:
    """The namespaces the attribute snapshot reads, bound at its first use (before the candidate is imported): each
    watched module's ``__dict__`` and each watched class's MRO dictionaries, read as plain mappings. Nothing a
    candidate can set is ever called while reading them (no ``dir()``, which calls a module's own ``__dir__``; no
    property getters; no ``isinstance``, which consults ``__class__``), since the snapshot runs after forward with
    every other guard off."""

    def __init__(self) -> None:
        self.targets: list[tuple[str, list[Any]]] | None = None
        self._class_dict = type.__dict__["__dict__"].__get__
        self._module_dict = vars(ModuleType)["__dict__"].__get__
        self._mro = type.__dict__["__mro__"].__get__

    def bind(self) -> list[tuple[str, list[Any]]]:
        if self.targets is not None:
            return self.targets
        targets: list[tuple[str, list[Any]]] = []
        for name in _WATCHED_MODULES:
            module = sys.modules.get(name)
            if isinstance(module, ModuleType):
                extra = [c for c in self._mro(type(module)) if c not in (ModuleType, object)]
                targets.append((name, [self._module_dict(module), *(self._class_dict(c) for c in extra)]))
        classes: list[tuple[str, type]] = [("torch.Tensor", torch.Tensor), ("torch.nn.Module", torch.nn.Module)]
        for module_name, name in _WATCHED_CLASSES:
            cls = getattr(sys.modules.get(module_name), name, None)
            if isinstance(cls, type):
                classes.append((f"{module_name}.{name}", cls))
        if torch.cuda.is_available():
            classes.append(("torch.cuda.Event", torch.cuda.Event))
        for prefix, cls in classes:
            targets.append((prefix, [self._class_dict(c) for c in self._mro(cls) if c is not object]))
        self.targets = targets
        return targets


_WATCHED = _Watched()
# Read through these (bound at import, before any candidate): C functions, never a Python attribute of torch.
_MODE_STACK_DEPTHS = (torch._C._len_torch_dispatch_stack, torch._C._len_torch_function_stack)
_POP_FUNCTION_MODE, _POP_DISPATCH_MODE = torch._C._pop_torch_function_stack, torch._C._pop_torch_dispatch_stack
_PUSH_DISPATCH_MODE, _DISPATCH_MODE_AT = torch._C._push_on_torch_dispatch_stack, torch._C._get_dispatch_stack_at


def _disguised(wrapper: Any, original: Any) -> Any:
    """``wrapper`` (put in place of a library's ``original``) answering as the original does to what a candidate may
    read of a function: its name, qualified name, module and docstring, and the parameters ``inspect.signature``
    gives. A wrapper named ``counted`` from ``evaluator.sandboxed.guards`` would tell a verified process from a user's
    program. No ``__wrapped__``: ``inspect.unwrap`` would hand the original over, past the wrapper."""
    for name in ("__module__", "__name__", "__qualname__", "__doc__"):
        try:
            setattr(wrapper, name, getattr(original, name))
        except (AttributeError, TypeError):
            continue
    try:
        wrapper.__signature__ = _SIGNATURE(original)
    except (TypeError, ValueError):  # a builtin without a text signature (see docs/verifier.md, Known limits)
        pass
    return wrapper


def _dispatch_stack_test() -> Callable[[Any], bool]:
    """Whether a mode is on the dispatch stack, through torch's C getters bound now (in the closure: a default
    argument would be handed out by ``inspect.signature``)."""
    depth, at = _MODE_STACK_DEPTHS[0], _DISPATCH_MODE_AT

    def on_stack(mode: Any) -> bool:
        return any(at(i) is mode for i in range(depth()))
    return on_stack


_on_dispatch_stack = _dispatch_stack_test()


# The numerics switches, read through torch's C getters (bound at import) like the mode stacks.
_NUMERICS = (("torch.float32_matmul_precision", torch._C._get_float32_matmul_precision),
             ("torch.backends.cuda.matmul.allow_tf32", torch._C._get_cublas_allow_tf32),
             ("torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
              torch._C._get_cublas_allow_fp16_reduced_precision_reduction),
             ("torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
              torch._C._get_cublas_allow_bf16_reduced_precision_reduction),
             ("torch.backends.cudnn.allow_tf32", torch._C._get_cudnn_allow_tf32))
_PLAIN_VALUES = (bool, int, float, str)
_MODULE_HOOKS = ("__getattr__", "__dir__")
_GETSIGNAL, _GETITIMER = _signal_module.getsignal, _signal_module.getitimer  # C functions (signal.py wraps them)
_SIGNALS = sorted(int(n) for n in signal.valid_signals())
_TIMERS = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)
_HARNESS = "evaluator."  # the harness's own modules: their private state is watched too (_THIS_FILE, allow-lists)
_ENVIRON, _OS_NAMESPACE = os.environ, vars(os)
_ENVIRON_NAMESPACE = vars(os.environ)
_ENVIRON_DATA: dict[bytes, bytes] = _ENVIRON_NAMESPACE["_data"]  # what os.environ reads and writes


def _environment_state() -> str:
    """The process environment as Python sees it (``os.environ``, its ``_data``, where ``os`` finds them), read
    without calling anything a candidate could have put there."""
    if _OS_NAMESPACE.get("environ") is not _ENVIRON or _ENVIRON_NAMESPACE.get("_data") is not _ENVIRON_DATA:
        return "<rebound>"
    items = list(_ENVIRON_DATA.items())
    if any(type(k) is not bytes or type(v) is not bytes for k, v in items):
        return "<not bytes>"
    return repr(sorted(items))


# The registries C pickle bound when it was imported (replacing ``copyreg.dispatch_table`` changes nothing; adding to
# the dict does): bound here, before any candidate runs.
_PICKLE_REGISTRIES = (("copyreg.dispatch_table", copyreg.dispatch_table),
                      ("copyreg._extension_registry", copyreg._extension_registry),  # type: ignore[attr-defined]
                      ("copyreg._inverted_registry", copyreg._inverted_registry))  # type: ignore[attr-defined]


def snapshot_attributes() -> dict[str, Any]:
    """Identities of the attributes a cheat would patch (timers, torch functions, tensor methods), the numerics
    switches, the torch mode stacks and the environment. Reads only (see :class:`_Watched`)."""
    snap: dict[str, Any] = {"torch.mode_stacks": repr(tuple(depth() for depth in _MODE_STACK_DEPTHS))}
    for prefix, namespaces in _WATCHED.bind():
        for hook in _MODULE_HOOKS:  # PEP 562 hooks: dir() and missing-attribute lookups run them
            snap[f"{prefix}.{hook}"] = id(namespaces[0][hook]) if hook in namespaces[0] else "<absent>"
        seen: set[str] = set()
        for namespace in namespaces:
            for name, value in list(namespace.items()):
                if type(name) is not str or name in seen:
                    continue
                seen.add(name)
                if name.startswith("_") and not callable(value) and not prefix.startswith(_HARNESS):
                    continue  # a library's own lazy state (torch.cuda._cached_device_count, _initialized, ...)
                # Callable dunders too: the harness indexes, compares and multiplies tensors after forward.
                snap[f"{prefix}.{name}"] = repr(value) if type(value) in _PLAIN_VALUES else id(value)
    for key, read in _NUMERICS:  # numerics switches a candidate could flip to buy speed with precision
        snap[key] = repr(read())
    snap["os.environ"] = _environment_state()
    # Pickle's registries: the outputs are pickled after forward with every guard off, and a reducer registered for
    # torch.Tensor would run the real kernel there, on the copy handed over (forward returning anything).
    for key, registry in _PICKLE_REGISTRIES:
        snap[key] = repr(sorted((id(k), id(v)) for k, v in list(registry.items())))
    snap["signal.handlers"] = repr([id(_GETSIGNAL(n)) for n in _SIGNALS])
    snap["signal.timers"] = repr([_GETITIMER(t) for t in _TIMERS])
    return snap


def changed_attributes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Names whose identity or value changed or that disappeared (new names are lazy imports)."""
    return sorted(k for k in before if after.get(k, "<absent>") != before[k])


def warm_up_guards() -> None:
    """Trigger the lazy imports the guards themselves cause (torch._dynamo wraps torch.manual_seed when
    first imported), so that the attribute snapshot taken afterwards sees a settled torch; and the ones a
    candidate's allowed toolchain causes (``kernelevo.cuda.compile`` reads the settings, whose import walks
    frames inside pydantic), so that they happen before any guard is active; and the ones installing the guards
    causes (``load_inline``'s module, wrapped on a GPU), so that a load's guard phase does not pay them; and
    filelock's, which would add an audit hook. Nothing writes bytecode."""
    # filelock (a requirement of torch, whose compile and extension caches lock with it) adds an audit hook of its own
    # when first imported on Python >= 3.12 (it watches for forks), which the guard refuses a candidate's import to do:
    # a library's dormant @torch.compile imports torch._inductor, which imports it.
    import filelock  # noqa: F401
    import torch._dynamo  # noqa: F401
    import torch.utils.cpp_extension  # noqa: F401

    import kernelevo.cuda  # noqa: F401
    import kernelevo.settings

    sys.dont_write_bytecode = True
    kernelevo.settings.get_settings()

    probe = torch.ones(2)
    with OpRecorder():
        torch.empty_like(probe)
    state = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.empty(1)
    torch.use_deterministic_algorithms(state)


def live_threads() -> set[int]:
    return {t.ident for t in threading.enumerate() if t.ident is not None}


def poison_allocator(device: str, nbytes: int) -> None:
    """Fill memory the caching allocator will hand out next with NaN, so a kernel that leaves part
    of its output unwritten (or returns a recycled buffer) shows NaN instead of an old answer."""
    if device != "cuda" or nbytes <= 0:
        return
    blocks = [torch.full((max(nbytes // 4, 1),), float("nan"), dtype=torch.float32, device=device) for _ in range(4)]
    del blocks
