"""Runtime guards inside the candidate process: the second line of defence behind the static checks.

Static checks read the source; these watch what the candidate actually does while it is imported
and called: which torch ops ran (the kernel must do the math), whether any kernel launched, whether it
touched files, sockets, processes, frames or the garbage collector (an audit hook), whether it patched
torch/time/triton attributes, and whether it left threads behind. They run in the candidate process,
so they are installed before the candidate is imported and checked after every call.
"""

from __future__ import annotations

import inspect
import sys
import sysconfig
import threading
from pathlib import Path
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

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
)


def _op_name(func: Any) -> str:
    packet = getattr(func, "overloadpacket", func)
    return str(getattr(packet, "__name__", packet)).split(".")[-1]


class OpRecorder(TorchDispatchMode):
    """Records torch ops the candidate ran outside its own kernels (the Triton interpreter's
    internal tensor handling is exempt: it is the kernel running)."""

    def __init__(self, allowed_extra: tuple[str, ...] = ()):
        super().__init__()
        self.allowed = ALLOWED_ATEN_OPS | {a.split(".")[-1] for a in allowed_extra}
        self.violations: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = _op_name(func)
        if name not in self.allowed and not _inside_triton():
            qualified = f"aten.{name}"
            if qualified not in self.violations:
                self.violations.append(qualified)
        return func(*args, **(kwargs or {}))


def _inside_triton() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if "/triton/" in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False


class LaunchCounter:
    """Counts kernel launches through Triton, kernelevo.cuda and load_inline modules."""

    def __init__(self) -> None:
        self.count = 0
        self.foreign_stream_launches = 0  # launches while a stream other than the harness's was current
        self.resources: dict[str, dict[str, int]] = {}  # kernel name -> registers, spills, shared memory
        self._installed = False

    def install(self, extension_root: Path | None = None) -> None:
        if self._installed:
            return
        self._installed = True
        if extension_root is not None:
            from evaluator.sandboxed import inline_ext

            inline_ext.install(self, extension_root)
        for cls in _triton_function_classes():
            self._wrap_method(cls, "run")
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
            result = original(self_, *args, **kwargs)
            counter.note_resources(self_, result)
            return result

        setattr(cls, name, counted)

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


class AuditGuard:
    """An audit hook that refuses file, network, process, frame and gc access originating in the
    candidate's own code (calls made by torch or triton on its behalf are allowed)."""

    def __init__(self, candidate_file: Path, allowed_imports: frozenset[str]):
        self.candidate_file = str(Path(candidate_file).resolve())
        self.allowed_imports = allowed_imports
        self.violations: list[str] = []
        self.active = False
        self._busy = threading.local()

    def install(self) -> None:
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple) -> None:
        if not self.active or getattr(self._busy, "flag", False):
            return
        if event == "import":
            root = str(args[0]).split(".")[0]
            if root in self.allowed_imports or root.startswith("_kernelevo_"):
                return
        elif not event.startswith(_BLOCKED_EVENT_PREFIXES):
            return
        self._busy.flag = True
        try:
            culprit = self._originates_in_candidate()
        finally:
            self._busy.flag = False
        if culprit:
            message = f"{event} {_short(args)} from {Path(self.candidate_file).name}:{culprit}"
            self.violations.append(message)
            raise PermissionError(f"kernelevo verifier: candidates may not use {event}")

    def _originates_in_candidate(self) -> int | None:
        frame = sys._getframe(2)
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename == self.candidate_file:
                return frame.f_lineno
            if filename.startswith("<frozen importlib"):
                return None  # the import machinery: governed by the "import" event
            if not (filename.startswith("<") or _is_stdlib(filename) or filename == _THIS_FILE):
                return None  # the nearest non-stdlib caller is a library (torch, triton): allowed
            frame = frame.f_back
        return None


def _is_stdlib(filename: str) -> bool:
    return filename.startswith(_STDLIB) and "-packages" not in filename


def _short(args: tuple) -> str:
    text = repr(args)
    return text if len(text) < 80 else text[:77] + "..."


_WATCHED_MODULES = ("torch", "torch.nn.functional", "torch.cuda", "torch.nn", "time", "math", "triton",
                    "triton.language", "triton.testing", "torch.backends.cuda", "torch.backends.cudnn")


def snapshot_attributes() -> dict[str, Any]:
    """Identities of the attributes a cheat would patch (timers, torch functions, tensor methods)."""
    snap: dict[str, Any] = {}
    targets: list[tuple[str, Any]] = [(m, sys.modules[m]) for m in _WATCHED_MODULES if m in sys.modules]
    targets += [("torch.Tensor", torch.Tensor), ("torch.nn.Module", torch.nn.Module)]
    if torch.cuda.is_available():
        targets += [("torch.cuda.Event", torch.cuda.Event)]
    for prefix, obj in targets:
        for name in dir(obj):
            if name.startswith("__"):
                continue
            try:
                raw = inspect.getattr_static(obj, name)  # unbound: a classmethod is the same object each time
                value = getattr(obj, name) if isinstance(raw, property) else raw
            except Exception:
                continue
            snap[f"{prefix}.{name}"] = repr(value) if isinstance(value, (bool, int, float, str)) else id(value)
    # Numerics switches a candidate could flip to buy speed with precision.
    snap["torch.float32_matmul_precision"] = torch.get_float32_matmul_precision()
    for flag in ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        snap[f"torch.backends.cuda.matmul.{flag}"] = repr(getattr(torch.backends.cuda.matmul, flag, None))
    snap["torch.backends.cudnn.allow_tf32"] = repr(torch.backends.cudnn.allow_tf32)
    return snap


def changed_attributes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Names whose identity or value changed or that disappeared (new names are lazy imports)."""
    return sorted(k for k in before if after.get(k, "<absent>") != before[k])


def warm_up_guards() -> None:
    """Trigger the lazy imports the guards themselves cause (torch._dynamo wraps torch.manual_seed when
    first imported), so that the attribute snapshot taken afterwards sees a settled torch."""
    import torch._dynamo  # noqa: F401

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
