"""Out-of-bounds memory access in Triton kernels run by the interpreter (CPU).

On a GPU, a load past the end of a tensor reads whatever lies there or faults; the interpreter
reads host memory and never complains, and a value read out of bounds and then discarded (a
``tl.where`` that never selects it) leaves no trace in the outputs. So on CPU every masked-in lane of
every load and store is checked against the extents of the kernel's tensor arguments (each view's
first to last element, not its whole storage: the verifier's guard regions lie outside the view).

Hooks the interpreter's ``GridExecutor.__call__`` (to learn the arguments) and the functions of its C
extension that touch memory (``load``, ``store``, ``atomic_rmw``, ``atomic_cas``: every masked load and store, and
the atomics, go through them). Those functions read and write any address as numpy arrays, so they may run only
while a launch's programs run: called from host code (forward, a grid callable, a pre-run hook), they would be
the candidate computing on the host with no torch op to record. Triton versions without those names run
unchecked; ``installed`` says which. A host ``TensorDescriptor`` argument's memory is its ``base`` tensor's.

Two more corrections of the interpreter, so that an honest kernel gets a GPU's answer or a clear "needs a GPU":
casts between float32 and bfloat16 round to nearest even (the interpreter truncates, so a kernel rounding an
intermediate as eager does lands an ulp or two off), and every libdevice function (``triton.language.extra``'s
and its backends') raises an error naming libdevice (the interpreter has none: its stubs return None).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

_RAW_ACCESS = ("load", "store", "atomic_rmw", "atomic_cas")  # the interpreter's C functions that touch memory


@dataclass
class BoundsChecker:
    """Collects out-of-bounds accesses; ``violations`` holds one line per kernel and kind of access."""

    violations: list[str] = field(default_factory=list)
    installed: bool = False
    _extents: list[tuple[int, int, str]] = field(default_factory=list)  # [start, end) bytes, argument name
    _kernel: str = ""
    _launching: int = 0  # GridExecutor calls in progress
    _running: bool = False  # a launch's programs are running (after its grid was set, before it returns)

    def install(self) -> None:
        try:
            from triton.runtime import interpreter
        except Exception:  # no Triton: nothing to check
            return
        executor = getattr(interpreter, "GridExecutor", None)
        builder = getattr(interpreter, "interpreter_builder", None)
        raw = getattr(interpreter, "_interpreter", None)
        if executor is None or builder is None or raw is None or \
                not all(callable(getattr(raw, name, None)) for name in _RAW_ACCESS) or \
                not callable(getattr(type(builder), "set_grid_dim", None)):
            return
        self._wrap_executor(executor)
        self._watch_programs(builder)
        self._wrap_raw_access(raw)
        self._watch_bf16(builder)
        _round_bf16_casts(interpreter, builder)
        _refuse_libdevice()
        _keep_interpreter_globals_out(interpreter)
        self.installed = True

    bf16_arithmetic = False  # the interpreter computed on bfloat16 values (it does that on raw bits: wrong)

    def _watch_bf16(self, builder: Any) -> None:
        """Note when a kernel does arithmetic on bfloat16 values (an operator, ``tl.fma`` or ``tl.dot`` of bf16
        tiles): the interpreter (not a GPU) gets that wrong, so an ``incorrect`` result then says "needs a GPU"
        rather than blaming the kernel."""
        cls, checker = type(builder), self
        for name in ("binary_op", "create_fma", "create_dot"):
            original = getattr(cls, name, None)
            if original is not None:
                setattr(cls, name, _noting_bf16(original, checker))

    def _wrap_executor(self, executor: type) -> None:
        original, checker = executor.__call__, self

        def call(self_: Any, *args: Any, **kwargs: Any) -> Any:
            named = dict(zip(getattr(self_, "arg_names", None) or [], args))
            named.update(kwargs)
            outer = checker._kernel, checker._extents, checker._running
            checker._kernel = getattr(self_.fn, "__name__", "kernel")
            checker._extents = [e for name, value in named.items() for e in _extents(value, name)]
            checker._running = False  # the grid callable and pre-run hooks run first: host code
            checker._launching += 1
            try:
                return original(self_, *args, **kwargs)
            finally:
                checker._launching -= 1
                checker._kernel, checker._extents, checker._running = outer

        executor.__call__ = call  # type: ignore[method-assign]  # the hook itself: mypy does not model patching a class

    def _watch_programs(self, builder: Any) -> None:
        """The launch sets its evaluated grid just before its programs run (``set_grid_dim``); from then on the
        interpreter is running the kernel. Looked up on the class at each call (the launch counter wraps it there)."""
        checker = self

        def set_grid_dim(*args: Any, **kwargs: Any) -> Any:
            result = type(builder).set_grid_dim(builder, *args, **kwargs)
            if checker._launching:
                checker._running = True
            return result

        builder.set_grid_dim = set_grid_dim

    def _wrap_raw_access(self, raw: Any) -> None:
        """Every memory access of the interpreter, checked where it happens, and only while programs run."""
        checker = self

        def load(ptrs: Any, mask: Any, other: Any, dtype: Any) -> Any:
            checker._access("load", ptrs, mask, lambda: np.dtype(dtype).itemsize, "read")
            return original["load"](ptrs, mask, other, dtype)

        def store(ptrs: Any, value: Any, mask: Any) -> Any:
            checker._access("store", ptrs, mask, lambda: value.dtype.itemsize, "wrote")
            return original["store"](ptrs, value, mask)

        def atomic_rmw(op: Any, ptrs: Any, value: Any, mask: Any, sem: Any) -> Any:
            checker._access("atomic_rmw", ptrs, mask, lambda: value.dtype.itemsize, "atomically updated")
            return original["atomic_rmw"](op, ptrs, value, mask, sem)

        def atomic_cas(ptrs: Any, compare: Any, value: Any, sem: Any) -> Any:
            checker._access("atomic_cas", ptrs, None, lambda: value.dtype.itemsize, "atomically updated")
            return original["atomic_cas"](ptrs, compare, value, sem)

        original = {name: getattr(raw, name) for name in _RAW_ACCESS}
        for fn in (load, store, atomic_rmw, atomic_cas):
            setattr(raw, fn.__name__, fn)

    def _access(self, name: str, ptrs: Any, mask: Any, width: Any, verb: str) -> None:
        if not self._running:
            what = (f"the Triton interpreter's raw memory function {name}() called from host code, outside a running "
                    "kernel (it reads and writes tensor memory as numpy arrays, with no kernel doing the work)")
            if what not in self.violations:
                self.violations.append(what)
            raise PermissionError(f"kernelevo verifier: {what}")
        self._check(ptrs, mask, width, verb)

    def _check(self, ptrs: Any, mask: Any, width_of: Any, verb: str) -> None:
        if not self._extents:
            return
        try:
            flat = np.asarray(ptrs, dtype=np.uint64)
            addresses = flat if mask is None else np.broadcast_to(flat, np.shape(mask))
            width = int(width_of())
            active = (addresses if mask is None else addresses[np.asarray(mask, dtype=bool)]).astype(np.int64)
        except Exception:  # an unexpected layout: check nothing rather than break the kernel
            return
        if active.size == 0:
            return
        inside = np.zeros(active.shape, dtype=bool)
        for start, end, _ in self._extents:
            inside |= (active >= start) & (active + width <= end)
        if inside.all():
            return
        outside = active[~inside]
        message = (f"kernel {self._kernel} {verb} {outside.size} element(s) outside every tensor argument "
                   f"({_where(int(outside[0]), self._extents)})")
        if not any(v.startswith(f"kernel {self._kernel} {verb} ") for v in self.violations):
            self.violations.append(message)
        # Never perform it: past the allocation lies unmapped memory (a SIGSEGV that would hide this finding) or
        # another allocation. The launch stops here; the finding stands even if the candidate catches the error.
        raise OutOfBounds(f"kernelevo verifier: {message}")


class OutOfBounds(MemoryError):
    """A kernel run by the interpreter accessed memory outside its tensor arguments (refused before it happened)."""


def _noting_bf16(original: Any, checker: BoundsChecker) -> Any:
    """``original`` (an interpreter builder method whose first operand is a tensor handle), setting
    ``checker.bf16_arithmetic`` when that operand holds bfloat16 values."""

    def call(self_: Any, first: Any, *rest: Any, **kwargs: Any) -> Any:
        try:
            scalar = str(first.dtype.scalar)
            if "bf16" in scalar or "bfloat16" in scalar:
                checker.bf16_arithmetic = True
        except AttributeError:
            pass
        return original(self_, first, *rest, **kwargs)

    return call


def f32_to_bf16_bits(values: Any) -> Any:
    """float32 -> bfloat16 bit patterns (uint16), rounded to nearest even as a GPU's cvt.rn and eager PyTorch do;
    NaN becomes the quiet NaN eager writes (0x7FC0). Exact for subnormals, ties, overflow to infinity."""
    data = np.ascontiguousarray(values, dtype=np.float32)
    bits = data.view(np.uint32).astype(np.uint64)  # no wrap-around in the sum below
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(data), np.uint16(0x7FC0), rounded).reshape(np.shape(values))


def bf16_bits_to_f32(bits: Any) -> Any:
    """bfloat16 bit patterns -> float32, exactly (the upper half of a float32; the interpreter flushes subnormals)."""
    data = np.ascontiguousarray(bits, dtype=np.uint16)
    return (data.astype(np.uint32) << 16).view(np.float32).reshape(np.shape(bits))


def correct_interpreter() -> None:
    """The interpreter's bfloat16 casts corrected as :meth:`BoundsChecker.install` corrects them, without any check
    (the plain process, :mod:`evaluator.sandboxed.plain`: its kernels get the arithmetic the guarded process gave
    them, and nothing watches them)."""
    try:
        from triton.runtime import interpreter
    except Exception:  # noqa: BLE001 - no Triton: nothing to correct
        return
    builder = getattr(interpreter, "interpreter_builder", None)
    if builder is not None:
        _round_bf16_casts(interpreter, builder)


def _round_bf16_casts(interpreter: Any, builder: Any) -> None:
    """The interpreter's casts between float32 and bfloat16 (``cast_impl``: ``.to()``, stores into bf16 memory,
    bf16 constants) computed as a GPU does. Only those two: every other cast is the interpreter's own."""
    cls, handle = type(builder), getattr(interpreter, "TensorHandle", None)
    original = getattr(cls, "cast_impl", None)
    try:
        import triton.language as tl
    except Exception:
        return
    if original is None or handle is None:
        return
    bf16, f32 = tl.bfloat16, tl.float32

    def cast_impl(self_: Any, src: Any, dst_type: Any) -> Any:
        source, target = src.dtype.scalar, dst_type.scalar
        if source == f32 and target == bf16:
            return handle(f32_to_bf16_bits(src.data), target)
        if source == bf16 and target == f32:
            return handle(bf16_bits_to_f32(src.data), target)
        return original(self_, src, dst_type)

    cls.cast_impl = cast_impl


LIBDEVICE_MODULES = ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice",
                     "triton.language.extra.hip.libdevice")


def _refuse_libdevice() -> None:
    """Every function of every libdevice module raises, naming itself: the interpreter has no libdevice (the
    backend-neutral stubs return None, the CUDA ones demand a compiler), so a kernel using it could only die of an
    unrelated error (``crashed``). Raised inside a kernel, the interpreter wraps it (InterpreterError), which the
    candidate process answers with "needs --device cuda". Patched before the candidate is imported, so that names
    imported from these modules are the raising ones too."""
    import importlib

    for module_name in LIBDEVICE_MODULES:
        try:
            module = importlib.import_module(module_name)
        except Exception:  # a backend this Triton build lacks
            continue
        for name, member in list(vars(module).items()):
            if callable(member) and not isinstance(member, type) and getattr(member, "__module__", "") == module_name \
                    and not name.startswith("_"):
                setattr(module, name, _libdevice_refusal(module_name, name))


def _libdevice_refusal(module_name: str, name: str) -> Any:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{module_name}.{name}: libdevice functions are GPU code; Triton's CPU interpreter "
                                  "cannot run them")

    refused.__name__ = refused.__qualname__ = name
    refused.__module__ = module_name
    return refused


def _keep_interpreter_globals_out(interpreter: Any) -> None:
    """Triton's interpreter copies its own module's globals (numpy, inspect, the builder...) into the module of
    every kernel it rewrites, i.e. into the candidate's module, where forward could then use them. Here the
    rewritten kernel runs in a merged copy instead: the candidate's module stays as the candidate wrote it."""
    rewriter = getattr(interpreter, "FunctionRewriter", None)
    original = getattr(rewriter, "_compile_and_exec", None)
    if rewriter is None or original is None:
        return
    own_globals = dict(vars(interpreter))

    def compile_and_exec(self_: Any, transformed_ast: Any) -> Any:
        code = compile(transformed_ast, filename=self_.filename, mode="exec")
        namespace = {**own_globals, **self_.fn.__globals__}  # the kernel's module wins; nothing is written back
        local_namespace = {**self_.kwargs}
        exec(code, namespace, local_namespace)
        return local_namespace[self_.fn.__name__]

    rewriter._compile_and_exec = compile_and_exec


def _extents(value: Any, name: str) -> list[tuple[int, int, str]]:
    """The memory a launch argument hands the kernel: a tensor view's, a host ``TensorDescriptor``'s base tensor's
    (the interpreter loads and stores through it), each tensor's of a tuple argument."""
    if isinstance(value, tuple):
        return [e for i, item in enumerate(value) for e in _extents(item, f"{name}[{i}]")]
    descriptor = _tensor_descriptor_type()
    if descriptor is not None and isinstance(value, descriptor):
        return _extents(value.base, f"{name}.base")
    extent = _extent(value, name)
    return [] if extent is None else [extent]


def _tensor_descriptor_type() -> Any:
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except Exception:  # a Triton without host descriptors
        return None
    return TensorDescriptor


def _extent(value: Any, name: str) -> tuple[int, int, str] | None:
    """[first byte, one past the last byte) of a tensor view, or None for non-tensors and empty tensors."""
    if not hasattr(value, "data_ptr") or not hasattr(value, "stride") or value.numel() == 0:
        return None
    last = sum((size - 1) * stride for size, stride in zip(value.shape, value.stride()))
    start = int(value.data_ptr())
    return start, start + (last + 1) * value.element_size(), name


def _where(address: int, extents: list[tuple[int, int, str]]) -> str:
    """Where an address lies relative to the nearest argument, in bytes ("64 bytes past the end of x_ptr")."""
    def distance(extent: tuple[int, int, str]) -> int:
        start, end, _ = extent
        return start - address if address < start else address - end + 1

    start, end, name = min(extents, key=distance)
    if address < start:
        return f"{start - address} bytes before the start of {name}"
    return f"{address - end} bytes past the end of {name}"

