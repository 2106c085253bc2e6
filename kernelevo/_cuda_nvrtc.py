"""NVRTC side of :mod:`kernelevo.cuda`: CUDA C++ source to cubin bytes, without needing a GPU.

Talks to NVRTC through ``cuda.bindings`` (the C API, stable across cuda-python 12.x and 13.x;
``cuda.core``'s ``ProgramOptions`` cannot take raw option strings). Also holds the pure helpers that
read what NVRTC produced: error line numbers from the log, kernel symbols from the cubin's ELF.
"""

from __future__ import annotations

import contextlib
import re
import struct
from functools import lru_cache
from pathlib import Path
from typing import Any

#: How many times NVRTC actually compiled something in this process (tests use it to prove cache hits).
COMPILE_COUNT = 0

_ERROR_LINE = re.compile(r"^[^\s(]*\((\d+)\): (?:catastrophic )?error", re.MULTILINE)
_bundled_headers_supported = True


def nvrtc_module() -> Any:
    """Import NVRTC's Python binding (``cuda.bindings.nvrtc``, or the pre-12.6 ``cuda.nvrtc``)."""
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        try:
            from cuda import nvrtc  # cuda-python < 12.6
        except ImportError as exc:
            raise RuntimeError(
                "NVRTC is not installed: kernelevo.cuda needs it to compile CUDA C++; "
                "install it with `pip install 'kernelevo[cuda]'`"
            ) from exc
    return nvrtc


@lru_cache(maxsize=1)
def nvrtc_version() -> str:
    """Return NVRTC's ``major.minor`` (part of every cache key: a new compiler means new cubins)."""
    err, major, minor = nvrtc_module().nvrtcVersion()
    _check(err, "nvrtcVersion")
    return f"{major}.{minor}"


def _check(err: Any, what: str) -> None:
    if int(err) != 0:
        raise RuntimeError(f"NVRTC call {what} failed with {err!r}")


def _include_dirs() -> list[str]:
    """CUDA header directories for NVRTC builds that cannot install their own bundled headers."""
    found: list[str] = []
    for lib in ("cudart", "cccl"):  # cuda.pathfinder knows pip wheels and toolkits; older ones lack "cccl"
        with contextlib.suppress(Exception):
            from cuda.pathfinder import find_nvidia_header_directory

            found += [d for d in [find_nvidia_header_directory(lib)] if d]
    if found:
        return found
    import os

    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "include" / "cuda_fp16.h").is_file():
            return [str(Path(root) / "include")]
    return []


def _run_nvrtc(source: str, name: str, options: list[str]) -> tuple[int, bytes, str]:
    """One NVRTC compile: (result code, cubin or b"", log)."""
    global COMPILE_COUNT
    nvrtc = nvrtc_module()
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], [])
    _check(err, "nvrtcCreateProgram")
    try:
        COMPILE_COUNT += 1
        encoded = [o.encode() for o in options]
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(encoded), encoded)
        err, size = nvrtc.nvrtcGetProgramLogSize(prog)
        _check(err, "nvrtcGetProgramLogSize")
        log = b" " * size
        (err,) = nvrtc.nvrtcGetProgramLog(prog, log)
        _check(err, "nvrtcGetProgramLog")
        cubin = b""
        if int(result) == 0:
            err, size = nvrtc.nvrtcGetCUBINSize(prog)
            _check(err, "nvrtcGetCUBINSize")
            cubin = b" " * size
            (err,) = nvrtc.nvrtcGetCUBIN(prog, cubin)
            _check(err, "nvrtcGetCUBIN")
        return int(result), cubin, log.rstrip(b"\x00").decode(errors="replace").strip()
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


@contextlib.contextmanager
def _file_lock(path: Path):
    """Serialise NVRTC's one-time header install across processes (POSIX ``flock``)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


_headers_ready: set[Path] = set()


def compile_cubin(source: str, name: str, options: list[str], arch: str, headers_dir: Path) -> tuple[bool, bytes, str]:
    """Compile ``source`` for ``arch`` and return (ok, cubin, log).

    CUDA headers (``cuda_fp16.h``, ``cuda_bf16.h``...) come from NVRTC's own bundled copy, installed
    once under ``headers_dir``; NVRTC versions without that option fall back to a toolkit include dir.
    """
    global _bundled_headers_supported
    base = [f"--gpu-architecture={arch}", *options]
    if _bundled_headers_supported:
        with contextlib.ExitStack() as stack:
            if headers_dir not in _headers_ready:
                stack.enter_context(_file_lock(headers_dir.with_name(headers_dir.name + ".lock")))
            result, cubin, log = _run_nvrtc(source, name, [*base, f"--use-bundled-headers={headers_dir}"])
        if not (result == 5 and "use-bundled-headers" in log):  # 5: NVRTC_ERROR_INVALID_OPTION
            _headers_ready.add(headers_dir)
            return result == 0, cubin, log
        _bundled_headers_supported = False
    result, cubin, log = _run_nvrtc(source, name, [*base, *(f"-I{d}" for d in _include_dirs())])
    return result == 0, cubin, log


def error_lines(log: str) -> list[int]:
    """Source line numbers NVRTC reported errors on, in order, without repeats."""
    seen: list[int] = []
    for match in _ERROR_LINE.finditer(log):
        line = int(match.group(1))
        if line not in seen:
            seen.append(line)
    return seen


def kernel_symbols(cubin: bytes) -> list[str]:
    """Names of the functions a cubin defines, read from its ELF symbol table.

    Lets a compile fail early (and without a GPU) when the requested kernel is missing, for
    example because it was not declared ``extern "C"`` and its name got C++-mangled.
    """
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:  # ELFCLASS64
        raise ValueError("not a 64-bit ELF cubin")
    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", cubin, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names: list[str] = []
    for _name, sh_type, _flags, _addr, offset, size, link, _info, _align, entsize in sections:
        if sh_type != 2 or not entsize:  # SHT_SYMTAB
            continue
        str_off = sections[link][4]
        for pos in range(offset, offset + size, entsize):
            st_name, st_info = struct.unpack_from("<IB", cubin, pos)
            if st_info & 0xF == 2:  # STT_FUNC
                end = cubin.index(b"\x00", str_off + st_name)
                names.append(cubin[str_off + st_name : end].decode(errors="replace"))
    return names
