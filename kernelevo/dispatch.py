"""Runtime dispatch: a decorated op calls its accepted kernel when that is known to be safe.

Safe means: dispatch is not disabled (``KERNELEVO_DISABLE=1``), a kernel is stored for this op id in
``kernels/`` of an ancestor directory of the op's file, the op's source hash (computed from the file
with :func:`kernelevo.op.source_hash`, like discovery does) equals the manifest's, the kernel can run in
this process at all (:mod:`kernelevo.dispatch_where`: a CPU-verified Triton kernel only under
``TRITON_INTERPRET=1``, a CUDA one only with a CUDA device of a verified capability; otherwise the
original runs, said at debug level on the ``kernelevo.dispatch`` logger), and the call is inside
the verified envelope (device type and capability, dtypes, ranks, dimension ranges, non-tensor
values; no autograd, since kernels are forward-only). Otherwise the original code runs, with one
warning per op and reason, pointed at the user's line that called the op. Loaded on an op's first call, never
at import or decoration.

Seeing it: :func:`explain` (public as ``kernelevo.explain(op, *args)``) says which kernel an op dispatches to in
this process, for which device, dtypes and shapes, and why not when not; ``KERNELEVO_LOG=dispatch`` prints
every decision of the ``kernelevo.dispatch`` logger to stderr (which kernel is used or why not, the first call
that ran the kernel, each kind of call that ran the original).
"""

from __future__ import annotations

import contextlib
import enum
import functools
import importlib.util
import logging
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelevo.dispatch_where import runtime_facts, unavailable_reason
from kernelevo.envelope import EnvelopeCheck, InitCheck, clear_capabilities, shapes_text
from kernelevo.kernel_store import KERNEL_MODULE, KERNELS_DIR, StoredKernel, find_kernels, kernel_module_name
from kernelevo.op import op_id, source_hash
from kernelevo.settings import SettingsError, get_settings

_SCALARS = (bool, int, float, str, type(None))
log = logging.getLogger(__name__)


class KernelEvoWarning(UserWarning):
    """An accepted kernel was not used (stale source, call outside its envelope, kernel unloadable)."""


# -------------------------------------------------------------------------------- logging and warnings

LOG_VARIABLE = "KERNELEVO_LOG"  # Settings.log: comma-separated topics; "dispatch" prints this module's decisions
_log_configured = False


def log_topics(value: str | None) -> frozenset[str]:
    """The topics ``KERNELEVO_LOG`` names (``dispatch``, or ``all``), lower-case (pure)."""
    return frozenset(t.strip().lower() for t in (value or "").split(",") if t.strip())


def log_setting() -> str:
    """``KERNELEVO_LOG``, read through the settings (``Settings.log``).

    This runs in users' programs, on an op's first call: a setting of another part of KernelEvo that does not
    validate (say a bot's ``KERNELEVO_GITHUB_APP_ID=abc`` in the same shell) makes the settings accessor raise
    :class:`~kernelevo.settings.SettingsError` on every call, and that must not break the op or silence its log.
    The topics are a plain string with nothing to validate, so the variable itself is read then."""
    try:
        return get_settings().log
    except SettingsError:
        return os.environ.get(LOG_VARIABLE, "")


def dispatch_disabled() -> bool:
    """``KERNELEVO_DISABLE``, read through the settings (``Settings.disable``), for every call of an op.

    As with :func:`log_setting`, an invalid setting of another part of KernelEvo must not make the user's op raise:
    the variable itself is read then, with the settings' own notion of true."""
    try:
        return get_settings().disable
    except SettingsError:
        return _env_flag(os.environ.get("KERNELEVO_DISABLE", ""))


@functools.lru_cache(maxsize=8)
def _env_flag(raw: str) -> bool:
    """A boolean variable read as the settings read it ("1", "true", "yes", "on"...; anything invalid: false)."""
    from pydantic import TypeAdapter, ValidationError

    try:
        return TypeAdapter(bool).validate_python(raw or False)
    except ValidationError:
        return False


def configure_logging(value: str | None = None) -> None:
    """With ``KERNELEVO_LOG=dispatch`` (or ``all``), send the ``kernelevo.dispatch`` logger's debug records to
    stderr, once per process, whatever logging the program itself configured (its own handlers still get them).
    ``value``: the topics (default: :func:`log_setting`)."""
    global _log_configured
    if _log_configured:
        return
    _log_configured = True
    if not log_topics(log_setting() if value is None else value) & {"dispatch", "all"}:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("kernelevo.dispatch: %(message)s"))
    handler.setLevel(logging.DEBUG)
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)


def _package_dirs() -> tuple[str, ...]:
    """Directories whose frames are not the user's: kernelevo itself and torch (``nn.Module.__call__``)."""
    dirs = {os.path.dirname(os.path.abspath(__file__))}
    torch_file = getattr(sys.modules.get("torch"), "__file__", None)
    if isinstance(torch_file, str):
        dirs.add(os.path.dirname(os.path.abspath(torch_file)))
    return tuple(d + os.sep for d in dirs)


def user_stacklevel(frame: Any = None) -> int:
    """The ``stacklevel`` of ``warnings.warn`` called by the caller of this function that reports the first
    frame outside kernelevo and torch: the user's line that called the op (a module op's ``model(x)`` goes
    through ``nn.Module.__call__``). Python 3.12's ``skip_file_prefixes`` does this, but 3.10 is supported."""
    prefixes = _package_dirs()
    frame = frame or sys._getframe(1)  # the function that will call warnings.warn: stacklevel 1
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(prefixes):
        frame = frame.f_back
        level += 1
    return level


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
    path = (stored.directory / KERNEL_MODULE).resolve()
    name = kernel_module_name(stored.name, path.read_text(encoding="utf-8"))
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


class Status(enum.Enum):
    """Where an op's dispatch stands in this process."""

    DISABLED = "disabled"  # KERNELEVO_DISABLE=1
    NO_SOURCE = "no_source"  # the op has no source file to find kernels/ next to
    NO_KERNEL = "no_kernel"  # no accepted kernel is stored for it
    STALE = "stale"  # the op's source changed since its kernel was verified
    UNAVAILABLE = "unavailable"  # the kernel cannot run in this process (device, capability, interpreter)
    LOAD_FAILED = "load_failed"  # its module or ModelNew raised
    READY = "ready"  # calls inside the envelope run the kernel


@dataclass(frozen=True)
class Lookup:
    """What is stored for an op and whether it may run here, found without importing the kernel."""

    status: Status
    reason: str  # a sentence: why the original runs, or which kernel is used
    op_id: str | None = None
    stored: StoredKernel | None = None


def look_up(target: object, qualname: str) -> Lookup:
    """The op's stored kernel and whether this process may use it (no kernel code is imported here)."""
    file = _source_file(target)
    if file is None or not file.exists():
        return Lookup(Status.NO_SOURCE, f"{qualname} has no source file to find kernels/ next to")
    found = locate_kernel(file, qualname)
    if found is None:
        return Lookup(Status.NO_KERNEL, f"no accepted kernel is stored for {qualname} of {file} (a kernels/ "
                                        "directory in a folder above it, written by `kernelevo optimize "
                                        "--write-kernel` or the bot)")
    identifier, stored = found
    current = source_hash(file.read_text(encoding="utf-8"), qualname)
    if current != stored.source_hash:
        rel_path, _, name = identifier.rpartition("::")
        return Lookup(Status.STALE, f"{identifier}: the op's source changed since kernels/{stored.name} was "
                                    f"verified; search it again with: kernelevo optimize {rel_path} --op {name} "
                                    "--write-kernel", identifier, stored)
    why_not = unavailable_reason(stored.envelope, runtime_facts())
    if why_not is not None:  # e.g. a CPU-verified Triton kernel in a process without the interpreter
        return Lookup(Status.UNAVAILABLE, f"{identifier}: kernels/{stored.name} is not used in this process: "
                                          f"{why_not}; running the original code", identifier, stored)
    return Lookup(Status.READY, f"{identifier}: using kernels/{stored.name} inside its verified envelope "
                                f"(device {stored.envelope.get('device_type', 'cuda')})", identifier, stored)


class _Resolved:
    """What the first (non-disabled) call found out: a kernel to use, or why the original runs."""

    def __init__(self, target: object, qualname: str, warn: Callable[[str, str], None]):
        self.kernel_class: type | None = None  # set only together with ``check``
        self.check: EnvelopeCheck | None = None
        self.init: InitCheck | None = None  # a module's constructor arguments, as verified
        self.lookup = found = look_up(target, qualname)
        stored = found.stored
        if found.status is Status.STALE:
            warn("stale", f"{found.reason}; running the original")
        else:
            log.debug("%s", found.reason if found.status is not Status.READY or stored is None else
                      f"{found.reason}; loading kernels/{stored.name}/{KERNEL_MODULE}")
        if found.status is not Status.READY or stored is None:
            return
        try:
            self.check = EnvelopeCheck(stored.envelope)
            self.init = InitCheck(stored.envelope["init"]) if stored.envelope.get("init") is not None else None
            self.kernel_class = _load_kernel_class(stored)
        except Exception as exc:  # a broken kernel module must not break the user's program
            self.kernel_class = None
            self.lookup = Lookup(Status.LOAD_FAILED, f"{found.op_id}: kernels/{stored.name}/{KERNEL_MODULE} could "
                                 f"not be loaded ({type(exc).__name__}: {exc}); running the original",
                                 found.op_id, stored)
            warn("load", self.lookup.reason)


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
            log.debug("%s", message)
            warnings.warn(message, KernelEvoWarning, stacklevel=user_stacklevel())

    def note_dispatched(self) -> None:
        """Log the first call that ran the kernel (what ``KERNELEVO_LOG=dispatch`` shows a user checking it)."""
        if "dispatched" not in self.warned:
            self.warned.add("dispatched")
            lookup = self.resolved.lookup if self.resolved is not None else None
            stored = lookup.stored if lookup is not None else None
            log.debug("%s: a call ran kernels/%s", lookup.op_id if lookup and lookup.op_id else self.qualname,
                      stored.name if stored else "?")

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
        """``ModelNew(*init)``, or None (with a warning, and no further tries) when it raises. Built as the verifier
        built it (:func:`construction_context`), whatever mode the user's first call runs in."""
        try:
            with construction_context():
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


@contextlib.contextmanager
def construction_context() -> Iterator[None]:
    """The state ``ModelNew`` is constructed in: gradients on, no inference mode, no autocast, and the user's random
    stream untouched (forked: a kernel's construction draws nothing from it). The verifier constructs it so; built
    inside the user's first call (``inference_mode`` when serving, ``no_grad`` in an eval loop), a constructor could
    otherwise tell the two apart and keep its wrong path for the user (a red-team kernel of session 7 did)."""
    import torch  # the user's program has imported it: an op is being called

    with contextlib.ExitStack() as stack:
        stack.enter_context(torch.random.fork_rng(devices=[]))
        stack.enter_context(torch.inference_mode(False))
        stack.enter_context(torch.enable_grad())
        stack.enter_context(torch.autocast("cpu", enabled=False))
        if torch.cuda.is_available():
            stack.enter_context(torch.autocast("cuda", enabled=False))
        yield


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
            self.note_dispatched()
            return self.forward(*args, **kwargs)
        self.warn(_reason_key(reason), f"{self.qualname}: {reason}; running the original")
        return self.original(*args, **kwargs)


def dispatcher_for_function(wrapper):
    """The per-call dispatcher of a decorated function: ``call(args, kwargs)``, a closure so that the
    hot path (settings flag, generated envelope check, kernel call) costs as few frames as possible."""
    configure_logging()
    original = wrapper.__wrapped__
    state = FunctionDispatcher(original, original, original.__qualname__)
    disabled = dispatch_disabled

    def call(args: tuple, kwargs: dict):
        if disabled():
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
        if dispatch_disabled() or type(module) is not self.target:
            return self.original(module, *args, **kwargs)
        resolved = self.resolved or self.resolve()
        kernel_class, check = resolved.kernel_class, resolved.check
        kernel = module.__dict__.get("_kernelevo_kernel")
        if kernel_class is None or check is None or kernel is _BUILT_OTHERWISE:
            return self.original(module, *args, **kwargs)
        reason = self.outside(check, args, kwargs, module)
        if reason is None and check._torch.is_grad_enabled() and any(
                p.requires_grad for p in module._parameters.values()):
            reason = "autograd is recording (parameters require grad) and the kernel is forward-only"
        if reason is None:
            if kernel is None:
                init_args, init_kwargs = module.__dict__.get("_kernelevo_init", ((), {}))
                why = resolved.init.check(self.target.__init__, init_args, init_kwargs) if resolved.init else None
                if why is not None:  # verified for another construction: this module keeps its own forward
                    module.__dict__["_kernelevo_kernel"] = _BUILT_OTHERWISE
                    self.warn(_reason_key(why), f"{self.qualname}: {why}; running the original")
                    return self.original(module, *args, **kwargs)
                kernel = self.instantiate(resolved, kernel_class, init_args, init_kwargs)
                if kernel is None:
                    return self.original(module, *args, **kwargs)
                _share_state(kernel, module)
                module.__dict__["_kernelevo_kernel"] = kernel
                self.note_dispatched()
            if kernel.training != module.training:  # a kernel that follows its flag follows the user's module
                kernel.train(module.training)
            return kernel.forward(*args, **kwargs)
        self.warn(_reason_key(reason), f"{self.qualname}: {reason}; running the original")
        return self.original(module, *args, **kwargs)


# A module whose constructor arguments differ from the verified ones: its calls run the original, decided once.
_BUILT_OTHERWISE = object()


def dispatcher_for_module(cls) -> ModuleDispatcher:
    """The dispatcher of a decorated ``nn.Module`` subclass (called from its wrapped ``forward``)."""
    configure_logging()
    return ModuleDispatcher(cls, cls.__dict__["_kernelevo_original_forward"], cls.__qualname__)


def clear_caches() -> None:
    """Forget located kernels and device capabilities (tests write kernels between calls)."""
    _index_cache.clear()
    clear_capabilities()


# ------------------------------------------------------------------------------------------ explain


@dataclass(frozen=True)
class Explanation:
    """What :func:`explain` found: the op, the status of its kernel in this process, the envelope the kernel
    is used inside, and, when arguments were given, whether that call would run the kernel. ``str()`` of it is
    the text a user reads."""

    op: str  # the op's qualname, or its id when a kernel is stored for it
    status: Status
    reason: str
    kernel_dir: str | None = None
    envelope: list[str] = field(default_factory=list)  # one line per verified device / argument
    call: str | None = None  # with arguments: "runs the kernel" or why the original runs
    dispatches: bool | None = None  # with arguments: whether that call runs the kernel

    @property
    def uses_kernel(self) -> bool:
        """Whether calls inside the envelope run the kernel in this process."""
        return self.status is Status.READY

    def __str__(self) -> str:
        reason = self.reason.removeprefix(f"{self.op}: ")
        lines = [f"{self.op}: {self.status.value}: {reason}"]
        if self.kernel_dir:
            lines.append(f"  kernel: {self.kernel_dir}")
        lines += [f"  {line}" for line in self.envelope]
        if self.call is not None:
            lines.append(f"  this call: {self.call}")
        return "\n".join(lines)


def envelope_lines(envelope: Mapping[str, Any]) -> list[str]:
    """The envelope in words: device (and capabilities), then per argument its dtypes and dims or values."""
    caps = envelope.get("capabilities")
    device = envelope.get("device_type", "cuda") + (f" (capabilities {[tuple(c) for c in caps]})" if caps else "")
    lines = [f"verified on: {device}, backend {envelope.get('backend') or 'triton'}"]
    for i, arg in enumerate(envelope.get("args", [])):
        if arg.get("kind") == "tensor":
            dims = ", ".join(str(d.get("min")) if d.get("min") == d.get("max") else
                             f"{d.get('min')}..{'' if d.get('max') is None else d.get('max')}"
                             for d in arg.get("dims", []))
            lines.append(f"argument {i}: tensor {'/'.join(arg.get('dtypes', []))} [{dims}]")
        elif arg.get("values") is not None:
            lines.append(f"argument {i}: {arg.get('type')} in {arg['values']}")
        else:
            lines.append(f"argument {i}: any {arg.get('type')}")
    if envelope.get("shapes"):
        lines.append("shapes: exactly those of one verified case: "
                     + "; ".join(shapes_text(case) for case in envelope["shapes"]))
    return lines


def _dispatcher_of(obj: object) -> tuple[_Dispatcher, object | None]:
    """The dispatcher of a decorated function, module class or module instance (the instance, for its call)."""
    from kernelevo.op import OptimizedFunction

    if isinstance(obj, OptimizedFunction):
        call = obj._kernelevo_dispatch
        state = getattr(call, "state", None) if call is not None else None
        if state is None:
            original = obj.__wrapped__
            state = FunctionDispatcher(original, original, original.__qualname__)
        return state, None
    cls, instance = (obj, None) if isinstance(obj, type) else (type(obj), obj)
    if "_kernelevo_original_forward" in getattr(cls, "__dict__", {}):
        dispatcher = cls.__dict__.get("_kernelevo_dispatch")
        return (dispatcher if isinstance(dispatcher, ModuleDispatcher) else
                ModuleDispatcher(cls, cls.__dict__["_kernelevo_original_forward"], cls.__qualname__)), instance
    raise TypeError(f"kernelevo.explain: {obj!r} is not an op (decorate a function or nn.Module subclass with "
                    "@kernelevo.optimize, and pass it, or an instance of the module)")


def explain(op: object, *args: Any, **kwargs: Any) -> Explanation:
    """Which kernel ``op`` dispatches to in this process, for which device, dtypes and shapes, and why the
    original runs when it does; with arguments, also whether *that* call would run the kernel (the op is not
    called). ``op``: a decorated function, a decorated module class, or an instance of one (needed to judge a
    module call). ``print(kernelevo.explain(op, x))`` reads as a short report."""
    dispatcher, instance = _dispatcher_of(op)
    if dispatch_disabled():
        return Explanation(dispatcher.qualname, Status.DISABLED, "KERNELEVO_DISABLE=1 is set: every call runs the "
                           "original code")
    resolved = dispatcher.resolved
    found = resolved.lookup if resolved is not None else look_up(dispatcher.target, dispatcher.qualname)
    stored = found.stored
    if stored is None:
        return Explanation(dispatcher.qualname, found.status, found.reason)
    reason = found.reason
    if found.status is Status.READY and resolved is None:
        reason += f" (its {KERNEL_MODULE} is imported on the op's first call)"
    result = Explanation(found.op_id or dispatcher.qualname, found.status, reason, str(stored.directory),
                         envelope_lines(stored.envelope))
    if not (args or kwargs):
        return result
    if found.status is not Status.READY:
        return _with_call(result, False, f"runs the original code ({found.status.value})")
    try:
        check = resolved.check if resolved is not None and resolved.check is not None else \
            EnvelopeCheck(stored.envelope)
    except (ValueError, KeyError, TypeError) as exc:
        return _with_call(result, False, f"runs the original code (the envelope cannot be read: {exc})")
    if isinstance(dispatcher, ModuleDispatcher):
        if instance is None:
            return _with_call(result, None, "pass an instance of the module, not the class, to judge a call")
        outside = dispatcher.outside(check, args, kwargs, instance)
        parameters = getattr(instance, "_parameters", {})
        if outside is None and check._torch.is_grad_enabled() and any(p.requires_grad for p in parameters.values()):
            outside = "autograd is recording (parameters require grad) and the kernel is forward-only"
    else:
        outside = dispatcher.outside(check, args, kwargs)
    if outside is None:
        return _with_call(result, True, f"runs kernels/{stored.name}")
    return _with_call(result, False, f"runs the original code: {outside}")


def _with_call(result: Explanation, dispatches: bool | None, call: str) -> Explanation:
    from dataclasses import replace

    return replace(result, dispatches=dispatches, call=call)
