"""Out-of-bounds memory access in Triton kernels run by the interpreter (CPU).

On a GPU, a load past the end of a tensor reads whatever lies there or faults; the interpreter
reads host memory and never complains, and a value read out of bounds and then discarded (a
``tl.where`` that never selects it) leaves no trace in the outputs. So on CPU every masked-in lane of
every load and store is checked against the extents of the kernel's tensor arguments (each view's
first to last element, not its whole storage: the verifier's guard regions lie outside the view).

Hooks the interpreter's ``GridExecutor.__call__`` (to learn the arguments) and the builder's masked
load and store. Triton versions without those names run unchecked; ``installed`` says which.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class BoundsChecker:
    """Collects out-of-bounds accesses; ``violations`` holds one line per kernel and kind of access."""

    violations: list[str] = field(default_factory=list)
    installed: bool = False
    _extents: list[tuple[int, int, str]] = field(default_factory=list)  # [start, end) bytes, argument name
    _kernel: str = ""
    _np_dtype: Any = None  # the interpreter's Triton-type -> numpy-dtype mapping, found at install

    def install(self) -> None:
        try:
            from triton.runtime import interpreter
        except Exception:  # no Triton: nothing to check
            return
        executor = getattr(interpreter, "GridExecutor", None)
        builder = getattr(interpreter, "interpreter_builder", None)
        self._np_dtype = getattr(interpreter, "_get_np_dtype", None)
        if executor is None or builder is None or self._np_dtype is None or not hasattr(builder, "create_masked_load"):
            return
        self._wrap_executor(executor)
        self._wrap_builder(builder)
        self._watch_bf16(builder)
        _keep_interpreter_globals_out(interpreter)
        self.installed = True

    bf16_arithmetic = False  # the interpreter computed on bfloat16 values (it does that on raw bits: wrong)

    def _watch_bf16(self, builder: Any) -> None:
        """Note when a kernel does arithmetic on bfloat16 values: the interpreter (not a GPU) gets that wrong,
        so an ``incorrect`` result then says "needs a GPU" rather than blaming the kernel."""
        cls = type(builder)
        original, checker = getattr(cls, "binary_op", None), self
        if original is None:
            return

        def binary_op(self_: Any, lhs: Any, rhs: Any, op: Any) -> Any:
            try:
                if "bf16" in str(lhs.dtype.scalar) or "bfloat16" in str(lhs.dtype.scalar):
                    checker.bf16_arithmetic = True
            except AttributeError:
                pass
            return original(self_, lhs, rhs, op)

        cls.binary_op = binary_op

    def _wrap_executor(self, executor: type) -> None:
        original, checker = executor.__call__, self

        def call(self_: Any, *args: Any, **kwargs: Any) -> Any:
            named = dict(zip(getattr(self_, "arg_names", None) or [], args))
            named.update(kwargs)
            checker._kernel = getattr(self_.fn, "__name__", "kernel")
            checker._extents = [e for name, value in named.items() if (e := _extent(value, name)) is not None]
            try:
                return original(self_, *args, **kwargs)
            finally:
                checker._extents = []

        executor.__call__ = call  # type: ignore[method-assign]  # the hook itself: mypy does not model patching a class

    def _wrap_builder(self, builder: Any) -> None:
        load, store, checker = builder.create_masked_load, builder.create_masked_store, self

        def masked_load(ptrs: Any, mask: Any, *rest: Any, **kwargs: Any) -> Any:
            checker._check(ptrs, mask, "read")
            return load(ptrs, mask, *rest, **kwargs)

        def masked_store(ptrs: Any, value: Any, mask: Any, *rest: Any, **kwargs: Any) -> Any:
            checker._check(ptrs, mask, "wrote")
            return store(ptrs, value, mask, *rest, **kwargs)

        builder.create_masked_load, builder.create_masked_store = masked_load, masked_store

    def _check(self, ptrs: Any, mask: Any, verb: str) -> None:
        if not self._extents:
            return
        try:
            addresses = np.broadcast_to(np.asarray(ptrs.data, dtype=np.uint64), np.shape(mask.data))
            width = int(np.dtype(self._np_dtype(ptrs.get_element_ty())).itemsize)
            active = addresses[np.asarray(mask.data, dtype=bool)].astype(np.int64)
        except Exception:  # an unexpected handle layout: check nothing rather than break the kernel
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

