"""The ``@kernelevo.optimize`` annotation and the op's identity (id and source hash).

Decorating stores the spec and nothing else: no torch, no triton, no file reads. The first *call* of
an op loads :mod:`kernelevo.dispatch`, which decides whether an accepted kernel may run.

The source hash is computed by :func:`source_hash` only, over the text of the file, both statically
(discovery, which never imports user code) and at run time (dispatch), so the two always agree.
"""

from __future__ import annotations

import functools
import sys
import types

# No ``typing`` import: it costs ~2 ms, more than everything else here together. mypy takes any module-level
# ``TYPE_CHECKING`` as true, so what is imported under it is seen by the checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import ast
    from collections.abc import Callable
    from typing import TypeGuard

    import torch

    Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef

KNOWN_BACKENDS = ("triton", "cuda")


class OpSpec:
    """What the decorator was told: how to build inputs, tolerances, backends, allowed library calls.

    A plain class rather than a dataclass: ``dataclasses`` imports ``inspect``, which user code that
    only decorates ops should not pay for.
    """

    __slots__ = ("inputs", "small_inputs", "init", "tolerance", "backends", "allow")

    def __init__(self, inputs, small_inputs=None, init=None, tolerance=None,
                 backends: tuple[str, ...] = ("triton", "cuda"), allow: tuple[str, ...] = ()):
        self.inputs = inputs
        self.small_inputs = small_inputs
        self.init = init
        self.tolerance = tolerance
        self.backends = tuple(backends)
        self.allow = tuple(allow)

    def __repr__(self) -> str:
        return f"OpSpec(backends={self.backends!r}, allow={self.allow!r}, tolerance={self.tolerance!r})"

    def init_args(self) -> list:
        """Constructor arguments for a module op (``init`` may be a sequence or a callable)."""
        init = self.init() if callable(self.init) else self.init
        return [] if init is None else list(init)


def op_id(rel_path: str, qualname: str) -> str:
    """The op's identity: ``relative/path.py::Qualname`` (forward slashes on every platform)."""
    return f"{rel_path.replace(chr(92), '/')}::{qualname}"


def split_op_id(identifier: str) -> tuple[str, str]:
    """Inverse of :func:`op_id`; raises ValueError on an id without ``::``."""
    path, sep, qualname = identifier.rpartition("::")
    if not sep or not path or not qualname:
        raise ValueError(f"not an op id (expected 'path/to/file.py::Qualname'): {identifier!r}")
    return path, qualname


def find_definition(tree: ast.Module, qualname: str) -> Definition | None:
    """The ``def``/``class`` node whose ``__qualname__`` would be ``qualname``, or None."""
    import ast

    def walk(body: list[ast.stmt], prefix: str) -> Definition | None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{node.name}"
                if name == qualname:
                    return node
                if qualname.startswith(name + "."):
                    inner = name + (".<locals>." if not isinstance(node, ast.ClassDef) else ".")
                    found = walk(node.body, inner)
                    if found is not None:
                        return found
            elif isinstance(node, (ast.If, ast.Try, ast.With)):  # defs under if/try/with keep the prefix
                for block in (getattr(node, "body", []), getattr(node, "orelse", []),
                              getattr(node, "finalbody", [])):
                    found = walk(block, prefix)
                    if found is not None:
                        return found
                for handler in getattr(node, "handlers", []):
                    found = walk(handler.body, prefix)
                    if found is not None:
                        return found
        return None

    return walk(tree.body, "")


def definition_segment(text: str, node: Definition) -> str:
    """Source of a def/class *including its decorators* (``ast.get_source_segment`` omits them):
    whole lines from the first decorator to the end of the body, first line's indentation removed."""
    from kernelevo.pyast import source_lines

    return _segment(source_lines(text, keepends=True), node)  # lines as the parser numbers them


def _segment(lines: list[str], node: Definition) -> str:
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    chunk = lines[start - 1 : node.end_lineno]
    chunk[0] = chunk[0].lstrip()
    return "".join(chunk).rstrip() + "\n"


def definition_hash(lines: list[str], node: Definition) -> str:
    """:func:`source_hash` of the def/class ``node``, given the file's lines (``\r\n`` made ``\n``, split as
    :func:`kernelevo.pyast.source_lines` with ends): a caller hashing many ops of one file splits it once."""
    return _sha256(_segment(lines, node))


def _sha256(text: str) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_hash(text: str) -> str:
    """sha256 of a whole file's text, line endings normalised: the source hash of a KernelBench task file."""
    return _sha256(text.replace("\r\n", "\n"))


def source_hash(text: str, qualname: str | None, tree: ast.Module | None = None) -> str | None:
    """sha256 of an op's source: the decorated def/class segment, or the whole file when ``qualname``
    is None (KernelBench task files, :func:`file_hash`). Returns None when ``qualname`` is not defined in ``text``.

    Pass ``tree`` when the caller already parsed ``text`` (discovery does); the result is the same.
    """
    if qualname is None:
        return file_hash(text)
    text = text.replace("\r\n", "\n")
    if tree is None:
        from kernelevo import pyast

        tree = pyast.parse(text)
    node = find_definition(tree, qualname)
    if node is None:
        return None
    from kernelevo.pyast import source_lines

    return definition_hash(source_lines(text, keepends=True), node)


def _check_callable(name: str, value: object, required: bool) -> None:
    if value is None and not required:
        return
    if not callable(value):
        raise TypeError(
            f"@kernelevo.optimize: {name}= must be a callable taking a device and returning a list of "
            f"argument tuples, e.g. {name}=lambda device: [(torch.randn(8, 64, device=device),)]; "
            f"got {type(value).__name__}"
        )


def _make_spec(inputs, small_inputs, init, tolerance, backends, allow) -> OpSpec:
    _check_callable("inputs", inputs, required=True)
    _check_callable("small_inputs", small_inputs, required=False)
    backends = (backends,) if isinstance(backends, str) else tuple(backends)
    unknown = [b for b in backends if b not in KNOWN_BACKENDS]
    if unknown or not backends:
        raise ValueError(
            f"@kernelevo.optimize: backends={backends!r}: each must be one of {KNOWN_BACKENDS}"
        )
    allow = (allow,) if isinstance(allow, str) else tuple(allow)
    return OpSpec(inputs, small_inputs, init, tolerance, backends, allow)


class OptimizedFunction:
    """A decorated function: calls go through :mod:`kernelevo.dispatch` (loaded on first call)."""

    # Copied from the function by ``functools.update_wrapper`` (with its name, module and docstring).
    __wrapped__: Callable[..., object]
    __qualname__: str

    def __init__(self, fn: Callable[..., object], spec: OpSpec):
        functools.update_wrapper(self, fn)
        self.__kernelevo_op__ = spec
        self._kernelevo_dispatch: Callable[[tuple, dict], object] | None = None

    def __call__(self, *args, **kwargs):
        dispatcher = self._kernelevo_dispatch
        if dispatcher is None:
            from kernelevo.dispatch import dispatcher_for_function

            dispatcher = self._kernelevo_dispatch = dispatcher_for_function(self)
        return dispatcher(args, kwargs)

    def __get__(self, instance, owner=None):  # methods: bind like a plain function would
        return self if instance is None else types.MethodType(self, instance)

    def __repr__(self) -> str:
        return f"<kernelevo op {self.__module__}.{self.__qualname__}>"


def _is_module_class(cls: type) -> TypeGuard[type[torch.nn.Module]]:
    """Whether ``cls`` subclasses ``torch.nn.Module``, without importing torch (whoever defined one has)."""
    loaded = sys.modules.get("torch")
    return loaded is not None and issubclass(cls, loaded.nn.Module)


def _decorate_class(cls: type, spec: OpSpec) -> type:
    if not _is_module_class(cls):
        raise TypeError(
            f"@kernelevo.optimize on class {cls.__qualname__}: only torch.nn.Module subclasses (or "
            f"functions) can be optimized"
        )
    original_init, original_forward = cls.__init__, cls.forward

    @functools.wraps(original_init)
    def __init__(self, *args, **kwargs):
        self._kernelevo_init = (args, kwargs)
        original_init(self, *args, **kwargs)

    @functools.wraps(original_forward)
    def forward(self, *args, **kwargs):
        dispatcher = cls.__dict__["_kernelevo_dispatch"]
        if dispatcher is None:
            from kernelevo.dispatch import dispatcher_for_module

            dispatcher = dispatcher_for_module(cls)
            cls._kernelevo_dispatch = dispatcher
        return dispatcher(self, args, kwargs)

    patched = {"__init__": __init__, "forward": forward, "__kernelevo_op__": spec,
               "_kernelevo_original_forward": original_forward, "_kernelevo_dispatch": None}
    for name, value in patched.items():  # attributes of the user's class, set at run time
        setattr(cls, name, value)
    return cls


def optimize(
    obj: Callable | None = None,
    *,
    inputs: Callable[[str], list[tuple]] | None = None,
    small_inputs: Callable[[str], list[tuple]] | None = None,
    init: object = None,
    tolerance: object = None,
    backends: tuple[str, ...] | str = KNOWN_BACKENDS,
    allow: tuple[str, ...] | str = (),
):
    """Mark a function or ``nn.Module`` subclass for KernelEvo.

    ``inputs(device)`` returns one argument tuple per case; ``small_inputs`` the same for cases small
    enough for CPU interpretation in CI; ``init`` the constructor arguments of a module op (a sequence
    or a callable returning one); ``tolerance`` overrides the per-dtype default; ``backends`` limits the
    search; ``allow`` names library calls the kernel may make (e.g. ``"torch.matmul"``).
    Decorating is cheap: nothing is imported or read until the op is first called.
    """

    def decorate(target):
        spec = _make_spec(inputs, small_inputs, init, tolerance, backends, allow)
        if isinstance(target, type):
            return _decorate_class(target, spec)
        if not callable(target):
            raise TypeError(
                f"@kernelevo.optimize applies to a function or nn.Module subclass, not {target!r}"
            )
        return OptimizedFunction(target, spec)

    return decorate if obj is None else decorate(obj)


def op_spec(obj: object) -> OpSpec | None:
    """The :class:`OpSpec` of a decorated function or class, or None when ``obj`` is not an op."""
    return getattr(obj, "__kernelevo_op__", None)


def original(obj: object) -> object:
    """The undecorated function, or for a module op a subclass whose ``forward`` is the original one
    (the reference the evaluator compares against must never dispatch to a kernel)."""
    if isinstance(obj, OptimizedFunction):
        return obj.__wrapped__
    if isinstance(obj, type) and "_kernelevo_original_forward" in obj.__dict__:
        return type("Model", (obj,), {"forward": obj.__dict__["_kernelevo_original_forward"],
                                      "__module__": obj.__module__})
    return obj
