"""The in-candidate side: the shim's exported functions, bound once, before any candidate code runs.

The harness calls :func:`bind` right after start-up and keeps the returned :class:`Tracer` in its own frame;
nothing is looked up later through module attributes, so a candidate that rebinds names in this module or in
``ctypes`` after import changes nothing the harness calls. The library is the one the dynamic loader already
preloaded (``RTLD_NOLOAD``): binding never loads a second copy.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from dataclasses import dataclass

NO_CHANNEL = (1 << 64) - 1  # what ke_trace_flush returns when the shim has no channel


@dataclass(frozen=True)
class Tracer:
    """Bound entry points of the preloaded shim (``loaded`` False: not preloaded; the calls do nothing)."""

    loaded: bool
    mark: Callable[[int, int], None]  # (tag, CUstream handle; 0 = legacy default stream)
    flush: Callable[[], int]  # seq of the FLUSH record written, NO_CHANNEL when there is none
    status: Callable[[], bool]  # CUPTI is recording and the channel is open
    problem: str = ""


def _inert(problem: str) -> Tracer:
    return Tracer(False, lambda tag, stream: None, lambda: NO_CHANNEL, lambda: False, problem)


def bind(library_path: str | None) -> Tracer:
    """Bind ``ke_trace_mark/flush/status`` of the already-loaded shim at ``library_path`` (None: look the symbols
    up in the process's global scope, where LD_PRELOAD puts them)."""
    try:
        if library_path is None:
            lib = ctypes.CDLL(None)
        else:
            lib = ctypes.CDLL(library_path, mode=os.RTLD_NOLOAD | os.RTLD_NOW)
        mark, flush, status = lib.ke_trace_mark, lib.ke_trace_flush, lib.ke_trace_status
    except (OSError, AttributeError) as exc:
        return _inert(f"the trace shim is not loaded in this process ({exc}); start it with LD_PRELOAD")
    mark.argtypes, mark.restype = (ctypes.c_uint64, ctypes.c_uint64), None
    flush.argtypes, flush.restype = (), ctypes.c_uint64
    status.argtypes, status.restype = (), ctypes.c_int

    def tracer_status() -> bool:
        return bool(status())

    return Tracer(True, mark, flush, tracer_status)
