"""Compile CUDA C++ at run time with NVRTC and launch it on PyTorch's current stream.

The preferred form of a CUDA candidate (docs/verifier.md, "Contract")::

    from kernelevo import cuda

    add = cuda.compile(SOURCE, "add")            # SOURCE defines extern "C" __global__ void add(...)
    add[(n + 255) // 256, 256](x, y, out, n)      # grid, block[, dynamic shared bytes]

Compiling needs no GPU (CI uses :func:`compile_check`); cubins are cached in memory and on disk under
``<cache_dir>/cuda``. Launches go to ``torch.cuda.current_stream()``, so they are ordered with torch's
own work and are recorded by CUDA-graph capture. Importing this module is cheap: torch and the CUDA
bindings are imported when first needed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelevo import _cuda_driver, _cuda_nvrtc
from kernelevo._cuda_args import check_param_sizes, normalize_launch, pack_args
from kernelevo._cuda_driver import CudaLaunchError

__all__ = [
    "CompileCheck",
    "CudaCompileError",
    "CudaLaunchError",
    "Kernel",
    "cache_key",
    "clear_memory_cache",
    "compile",
    "compile_check",
    "nvrtc_compile_count",
    "pack_args",
]

_CACHE_FORMAT = 1
_ARCH = re.compile(r"sm_\d+[af]?")
_memory: dict[str, Kernel] = {}
_gpu_torch: Any = None  # torch, once a GPU was seen (launchers skip the check afterwards)
_devices: dict[int, Any] = {}
NO_GPU = "no CUDA device: kernelevo.cuda kernels need a GPU; use compile_check for CPU-only checks"


class CudaCompileError(RuntimeError):
    """NVRTC rejected the source (or the kernel is missing); the message carries log and line numbers."""

    def __init__(self, message: str, *, name: str = "", arch: str = "", log: str = "", lines=()):
        super().__init__(message)
        self.name = name
        self.arch = arch
        self.log = log
        self.lines = list(lines)


@dataclass(frozen=True)
class CompileCheck:
    """Result of :func:`compile_check`: whether it compiled, NVRTC's log (or the error) and the time."""

    ok: bool
    log: str
    seconds: float


@dataclass(eq=False)
class Kernel:
    """A compiled ``extern "C" __global__`` function; ``kernel[grid, block(, shared)](*args)`` launches it."""

    name: str
    arch: str
    cubin: bytes = field(repr=False)
    log: str = field(default="", repr=False)
    key: str = ""
    _loaded: dict[int, tuple[Any, Any, list[int] | None]] = field(default_factory=dict, repr=False)
    _shared_allowed: dict[int, int] = field(default_factory=dict, repr=False)

    def __getitem__(self, launch: tuple) -> Callable[..., None]:
        """Return a launcher for ``(grid, block)`` or ``(grid, block, shared_mem_bytes)``."""
        grid, block, shared_mem = normalize_launch(launch, self.name)

        def launcher(*args: Any) -> None:
            torch = _torch_with_gpu()
            device = torch.cuda.current_device()
            packed = pack_args(args, device=_torch_device(torch, device), kernel=self.name)
            _module, function, sizes = self._load(device)
            check_param_sizes(packed, sizes, self.name)
            if shared_mem > 48 * 1024 and self._shared_allowed.get(device, 0) < shared_mem:
                _cuda_driver.set_max_dynamic_shared(function, shared_mem)
                self._shared_allowed[device] = shared_mem
            _cuda_driver.ensure_context(device)
            _cuda_driver.launch(function, grid, block, shared_mem, _current_stream(torch, device), packed, self.name)

        return launcher

    def resources(self) -> dict[str, int]:
        """Registers per thread, static shared, local (spill) and constant bytes, thread limits (GPU only)."""
        torch = _torch_with_gpu()
        return _cuda_driver.function_attributes(self._load(torch.cuda.current_device())[1])

    def _load(self, device: int) -> tuple[Any, Any, list[int] | None]:
        """(module, function, parameter byte sizes) on ``device``, loading the cubin the first time."""
        if device not in self._loaded:
            module, function = _cuda_driver.load_function(self.cubin, self.name, device)
            self._loaded[device] = (module, function, _cuda_driver.param_sizes(function))
        return self._loaded[device]


def _torch_with_gpu() -> Any:
    global _gpu_torch
    if _gpu_torch is None:
        import torch

        if not torch.cuda.is_available():
            raise CudaLaunchError(NO_GPU)
        _gpu_torch = torch
    return _gpu_torch


def _torch_device(torch: Any, index: int) -> Any:
    if index not in _devices:
        _devices[index] = torch.device("cuda", index)
    return _devices[index]


def _current_stream(torch: Any, device: int) -> int:
    """Raw handle of torch's current stream on ``device`` (the cheap private call when it exists)."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return raw(device) if raw is not None else torch.cuda.current_stream(device).cuda_stream


def default_arch() -> str:
    """``sm_XY`` of the current GPU, or ``sm_90`` (H100/H200) when there is none."""
    import torch

    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        return f"sm_{major}{minor}"
    return "sm_90"


def cache_key(source: str, name: str, options: Sequence[str], arch: str) -> str:
    """SHA-256 over everything that changes the cubin: source, kernel, options, arch, NVRTC version."""
    blob = json.dumps(
        [_CACHE_FORMAT, source, name, list(options), arch, _cuda_nvrtc.nvrtc_version()], ensure_ascii=False
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def nvrtc_compile_count() -> int:
    """How many NVRTC compiles this process ran (cache hits do not count); a seam for tests and benches."""
    return _cuda_nvrtc.COMPILE_COUNT


def clear_memory_cache() -> None:
    """Forget kernels compiled in this process (the disk cache stays)."""
    _memory.clear()


def _validate(name: str, options: Sequence[str], arch: str) -> None:
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise CudaCompileError(f'kernel name {name!r} is not a C identifier; pass the extern "C" name')
    if not _ARCH.fullmatch(arch):
        raise CudaCompileError(f"arch {arch!r} is not a real GPU architecture such as 'sm_90' or 'sm_90a'")
    for opt in options:
        if not isinstance(opt, str):
            raise CudaCompileError(f"NVRTC option {opt!r} must be a string such as '--use_fast_math'")
        if opt.startswith(("-arch", "--gpu-architecture", "--use-bundled-headers")):
            raise CudaCompileError(f"option {opt!r} is managed by kernelevo.cuda; pass arch=... instead")


def _compile_error(source: str, name: str, arch: str, log: str) -> CudaCompileError:
    lines = _cuda_nvrtc.error_lines(log)
    src = source.splitlines()
    where = ", ".join(map(str, lines)) or "unknown"
    shown = "".join(f"\n  line {n}: {src[n - 1].strip()}" for n in lines[:5] if 0 < n <= len(src))
    message = (
        f"CUDA compile failed for kernel {name!r} (arch {arch}, NVRTC {_cuda_nvrtc.nvrtc_version()}): "
        f"error at line {where}{shown}\n--- NVRTC log ---\n{log}"
    )
    return CudaCompileError(message, name=name, arch=arch, log=log, lines=lines)


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def compile(source: str, name: str, *, options: Sequence[str] = (), arch: str | None = None) -> Kernel:
    """Compile the ``extern "C" __global__`` function ``name`` in ``source`` to a cubin for ``arch``.

    ``options`` are NVRTC options (for example ``"--use_fast_math"``, ``"-DBLOCK=128"``). Results are
    cached in this process and on disk, keyed by :func:`cache_key`. Raises :class:`CudaCompileError`
    with NVRTC's log and the offending line numbers when the source does not compile, or when it
    compiles but does not define ``name`` (usually a missing ``extern "C"``).
    """
    from kernelevo.settings import get_settings

    arch = arch or default_arch()
    options = tuple(options)
    _validate(name, options, arch)
    key = cache_key(source, name, options, arch)
    if key in _memory:
        return _memory[key]
    cache_dir = Path(get_settings().cache_dir) / "cuda"
    cubin_path = cache_dir / f"{key}.cubin"
    log_path = cache_dir / f"{key}.log"
    cubin = cubin_path.read_bytes() if cubin_path.is_file() else b""
    if cubin[:4] == b"\x7fELF":
        log = log_path.read_text(errors="replace") if log_path.is_file() else ""
    else:
        headers = cache_dir / f"headers-nvrtc{_cuda_nvrtc.nvrtc_version()}"
        ok, cubin, log = _cuda_nvrtc.compile_cubin(source, name, list(options), arch, headers)
        if not ok:
            raise _compile_error(source, name, arch, log)
        symbols = _cuda_nvrtc.kernel_symbols(cubin)
        if name not in symbols:
            raise CudaCompileError(
                f"kernel {name!r} is not defined by the compiled source (it defines: "
                f'{", ".join(symbols) or "no kernels"}); declare it extern "C" __global__ so its name '
                "is not C++-mangled",
                name=name,
                arch=arch,
                log=log,
            )
        cache_dir.mkdir(parents=True, exist_ok=True)
        _write_atomic(log_path, log.encode())
        _write_atomic(cubin_path, cubin)
    kernel = Kernel(name=name, arch=arch, cubin=cubin, log=log, key=key)
    _memory[key] = kernel
    return kernel


def compile_check(source: str, name: str, *, options: Sequence[str] = (), arch: str = "sm_90") -> CompileCheck:
    """Compile without needing a GPU and report instead of raising; for CI and the verifier."""
    start = time.perf_counter()
    try:
        kernel = compile(source, name, options=options, arch=arch)
    except CudaCompileError as exc:
        return CompileCheck(ok=False, log=str(exc), seconds=time.perf_counter() - start)
    return CompileCheck(ok=True, log=kernel.log, seconds=time.perf_counter() - start)
