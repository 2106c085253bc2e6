"""Runtime dispatch: a decorated op calls its accepted kernel when that is known to be safe.

Safe means: dispatch is not disabled (``KERNELEVO_DISABLE=1``), a kernel is stored for this op id in
``kernels/`` of an ancestor directory of the op's file, the op's source hash (computed from the file
with :func:`kernelevo.op.source_hash`, like discovery does) equals the manifest's, the kernel can run in
this process at all (:mod:`kernelevo.dispatch_where`: a CPU-verified Triton kernel only under
``TRITON_INTERPRET=1``, a CUDA one only with a CUDA device of a verified capability; otherwise the
original runs, said at debug level on the ``kernelevo.dispatch`` logger), and the call is inside
the verified envelope (device type and capability, dtypes, ranks, dimension ranges, non-tensor
values; no autograd, since kernels are forward-only). Otherwise the original code runs, with one
warning per op and reason. Loaded on an op's first call, never at import or decoration.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelevo.dispatch_where import runtime_facts, unavailable_reason
from kernelevo.envelope import EnvelopeCheck, clear_capabilities
from kernelevo.kernel_store import KERNEL_MODULE, KERNELS_DIR, StoredKernel, find_kernels
from kernelevo.op import op_id, source_hash
from kernelevo.settings import get_settings

_SCALARS = (bool, int, float, str, type(None))
log = logging.getLogger(__name__)


class KernelEvoWarning(UserWarning):
    """An accepted kernel was not used (stale source, call outside its envelope, kernel unloadable)."""


def _source_file(obj: object) -> Path | None:
    code = getattr(obj, "__code__", None)
    if code is not None:
        return Path(code.co_filename)
    module = sys.modules.get(getattr(obj, "__module__", ""), None)
    file = getattr(module, "__file__", None)
    return Path(file) if file else None


_index_cache: dict[Path, dict[str, StoredKernel]] = {}


def locate_kernel(file: Path, qualname: str) -> tuple[str, StoredKernel] | None:
    """The op id and stored kernel of ``qualname`` in ``file``: the nearest ancestor directory with a
    ``kernels/`` entry for that id (the op id's path is relative to that directory)."""
    file = file.resolve()
    for root in file.parents:
        if (root / KERNELS_DIR).is_dir():
            index = _index_cache.get(root)
            if index is None:
                index = _index_cache[root] = {k.op_id: k for k in find_kernels(root)}
            identifier = op_id(file.relative_to(root).as_posix(), qualname)
            if identifier in index:
                return identifier, index[identifier]
    return None


def _load_kernel_class(stored: StoredKernel) -> type:
    """Import ``kernel.py`` under a private module name, registered in sys.modules (Triton's JIT
    looks kernels' modules up there)."""
    import hashlib

    path = (stored.directory / KERNEL_MODULE).resolve()
    name = f"_kernelevo_kernel_{stored.name}_{hashlib.sha256(str(path).encode()).hexdigest()[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"kernels/{stored.name}/{KERNEL_MODULE} is not an importable Python file ({path})")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module.ModelNew


class _Resolved:
    """What the first (non-disabled) call found out: a kernel to use, or why the original runs."""

    def __init__(self, target: object, qualname: str, warn: Callable[[str, str], None]):
        self.kernel_class: type | None = None  # set only together with ``check``
        self.check: EnvelopeCheck | None = None
        file = _source_file(target)
        if file is None or not file.exists():
            return  # no file to find kernels next to: the original runs, silently
        found = locate_kernel(file, qualname)
        if found is None:
            return  # no accepted kernel: the original runs, silently
        identifier, stored = found
        current = source_hash(file.read_text(encoding="utf-8"), qualname)
        if current != stored.source_hash:
            warn("stale", f"{identifier}: the op's source changed since kernels/{stored.name} was verified; "
                          f"running the original (re-run the search or `kernelevo verify`)")
            return
        why_not = unavailable_reason(stored.envelope, runtime_facts())
        if why_not is not None:  # e.g. a CPU-verified Triton kernel in a process without the interpreter
            log.debug("%s: kernels/%s is not used in this process: %s; running the original code",
                      identifier, stored.name, why_not)
            return
        try:
            self.check = EnvelopeCheck(stored.envelope)
            self.kernel_class = _load_kernel_class(stored)
        except Exception as exc:  # a broken kernel module must not break the user's program
            self.kernel_class = None
            warn("load", f"{identifier}: kernels/{stored.name}/{KERNEL_MODULE} could not be loaded "
                         f"({type(exc).__name__}: {exc}); running the original")
            return
        log.debug("%s: using kernels/%s inside its verified envelope (device %s)", identifier, stored.name,
                  stored.envelope.get("device_type", "cuda"))


@functools.lru_cache(maxsize=256)
def _reason_key(reason: str) -> str:
    """One warning per kind of reason: numbers (sizes, indices) do not make a new kind."""
    import re

    return "outside:" + re.sub(r"\b\d+\b", "#", reason)


_EMPTY = object()

# Parameter names (None for *args/**kwargs), defaults (``_EMPTY`` where required), how many may be positional.
_BindingPlan = tuple[tuple[str, ...] | None, tuple[Any, ...], int]


def _binding_plan(fn: Callable[..., Any]) -> _BindingPlan:
    """Parameter names and defaults of ``fn`` in order (``_EMPTY`` where required), computed once so that
    keyword calls bind without ``inspect.Signature.bind``; names is None for *args/**kwargs signatures, and
    the count says how many may be given positionally."""
    import inspect

    params = list(inspect.signature(fn).parameters.values())
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return None, (), 0
    positional = sum(1 for p in params if p.kind != p.KEYWORD_ONLY)
    return (tuple(p.name for p in params), tuple(_EMPTY if p.default is p.empty else p.default for p in params),
            positional)


class _Dispatcher:
    def __init__(self, target: object, original: Callable[..., Any], qualname: str):
        self.target = target
        self.original = original
        self.qualname = qualname
        self.resolved: _Resolved | None = None
        self.warned: set[str] = set()
        self._signature: _BindingPlan | None = None

    def warn(self, key: str, message: str) -> None:
        if key not in self.warned:
            self.warned.add(key)
            warnings.warn(message, KernelEvoWarning, stacklevel=4)

    def resolve(self) -> _Resolved:
        if self.resolved is None:
            self.resolved = _Resolved(self.target, self.qualname, self.warn)
        return self.resolved

    def normalise(self, args: tuple[Any, ...], kwargs: dict[str, Any], n_args: int,
                  skip_self: bool) -> tuple[Any, ...] | None:
        """Keyword and defaulted arguments as the positional tuple the envelope describes; None when
        an argument beyond the verified ones differs from its default."""
        if self._signature is None:
            self._signature = _binding_plan(self.original)
        names, defaults, positional = self._signature
        if names is None or len(args) > positional:
            return None  # *args/**kwargs signatures, or too many arguments: the original decides
        values = list(args)
        used = 0
        for name, default in zip(names[len(args):], defaults[len(args):]):
            if name in kwargs:
                values.append(kwargs[name])
                used += 1
            elif default is _EMPTY:
                return None  # a required argument is missing: the original raises the proper error
            else:
                values.append(default)
        if used != len(kwargs):
            return None  # an unknown keyword, or one given twice
        start = 1 if skip_self else 0
        values, defaults = values[start:], defaults[start:]
        for value, default in zip(values[n_args:], defaults[n_args:]):
            if value is default:
                continue
            if not (isinstance(value, _SCALARS) and type(value) is type(default) and value == default):
                return None
        return tuple(values[:n_args])

    def instantiate(self, resolved: _Resolved, kernel_class: type, init_args: tuple[Any, ...],
                    init_kwargs: dict[str, Any]) -> Any:
        """``ModelNew(*init)``, or None (with a warning, and no further tries) when it raises."""
        try:
            return kernel_class(*init_args, **init_kwargs)
        except Exception as exc:  # a broken kernel must not break the user's program
            resolved.kernel_class = None
            self.warn("load", f"{self.qualname}: the accepted kernel's ModelNew could not be constructed "
                              f"({type(exc).__name__}: {exc}); running the original")
            return None

    def outside(self, check: EnvelopeCheck, args: tuple[Any, ...], kwargs: dict[str, Any],
                bound_self: object = None) -> str | None:
        """None when the call is inside ``check``'s envelope, else the reason (``bound_self``: the module)."""
        if kwargs or len(args) != check.n_args:
            full = args if bound_self is None else (bound_self, *args)
            normal = self.normalise(full, kwargs, check.n_args, bound_self is not None)
            if normal is None:
                return "an argument not covered by the verified cases was given"
            args = normal
        return check.check(args)


class FunctionDispatcher(_Dispatcher):
    """State and slow paths of a decorated function's dispatch; :func:`dispatcher_for_function`
    wraps it in the closure that runs on every call."""

    # the envelope's generated check, once a usable kernel is resolved
    inside: Callable[[tuple[Any, ...]], bool] | None = None
    forward: Callable[..., Any] | None = None  # the kernel's bound ``ModelNew().forward``

    def slow(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """First call, calls with keywords, and calls outside the envelope."""
        resolved = self.resolved or self.resolve()
        kernel_class, check = resolved.kernel_class, resolved.check
        if kernel_class is None or check is None:
            return self.original(*args, **kwargs)
        if self.forward is None:
            kernel = self.instantiate(resolved, kernel_class, (), {})
            if kernel is None:
                return self.original(*args, **kwargs)
            self.forward = kernel.forward
            self.inside = check.inside
        reason = self.outside(check, args, kwargs)
        if reason is None:
            return self.forward(*args, **kwargs)
        self.warn(_reason_key(reason), f"{self.qualname}: {reason}; running the original")
        return self.original(*args, **kwargs)


def dispatcher_for_function(wrapper):
    """The per-call dispatcher of a decorated function: ``call(args, kwargs)``, a closure so that the
    hot path (settings flag, generated envelope check, kernel call) costs as few frames as possible."""
    original = wrapper.__wrapped__
    state = FunctionDispatcher(original, original, original.__qualname__)
    settings = get_settings

    def call(args: tuple, kwargs: dict):
        if settings().disable:
            return original(*args, **kwargs)
        inside = state.inside
        if inside is not None and not kwargs:
            try:
                ok = inside(args)
            except (AttributeError, TypeError):
                ok = False
            if ok:
                return state.forward(*args)
        return state.slow(args, kwargs)

    call.state = state
    return call


def _share_state(kernel, module) -> None:
    """Make the kernel module use the original module's parameters and buffers (same dicts, so they
    stay live through ``.to()``, ``load_state_dict`` and training) wherever the names agree."""
    for path, sub in module.named_modules():
        try:
            ksub = kernel.get_submodule(path) if path else kernel
        except AttributeError:
            continue
        if set(ksub._parameters) == set(sub._parameters):
            ksub._parameters = sub._parameters
        if set(ksub._buffers) == set(sub._buffers):
            ksub._buffers = sub._buffers


class ModuleDispatcher(_Dispatcher):
    def __call__(self, module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if get_settings().disable or type(module) is not self.target:
            return self.original(module, *args, **kwargs)
        resolved = self.resolved or self.resolve()
        kernel_class, check = resolved.kernel_class, resolved.check
        if kernel_class is None or check is None:
            return self.original(module, *args, **kwargs)
        reason = self.outside(check, args, kwargs, module)
        if reason is None and check._torch.is_grad_enabled() and any(
                p.requires_grad for p in module._parameters.values()):
            reason = "autograd is recording (parameters require grad) and the kernel is forward-only"
        if reason is None:
            kernel = module.__dict__.get("_kernelevo_kernel")
            if kernel is None:
                init_args, init_kwargs = module.__dict__.get("_kernelevo_init", ((), {}))
                kernel = self.instantiate(resolved, kernel_class, init_args, init_kwargs)
                if kernel is None:
                    return self.original(module, *args, **kwargs)
                _share_state(kernel, module)
                module.__dict__["_kernelevo_kernel"] = kernel
            return kernel.forward(*args, **kwargs)
        self.warn(_reason_key(reason), f"{self.qualname}: {reason}; running the original")
        return self.original(module, *args, **kwargs)


def dispatcher_for_module(cls) -> ModuleDispatcher:
    """The dispatcher of a decorated ``nn.Module`` subclass (called from its wrapped ``forward``)."""
    return ModuleDispatcher(cls, cls.__dict__["_kernelevo_original_forward"], cls.__qualname__)


def clear_caches() -> None:
    """Forget located kernels and device capabilities (tests write kernels between calls)."""
    _index_cache.clear()
    clear_capabilities()
