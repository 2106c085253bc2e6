"""Whether an accepted kernel can run in *this* process at all, decided once, before its module is imported.

A kernel is used only where it was verified: the device type of its envelope, and on CUDA a capability it was
verified on (when the manifest records capabilities). A Triton kernel verified on the CPU was verified under
Triton's interpreter; without ``TRITON_INTERPRET=1`` Triton has no CPU driver and the kernel's first launch
raises ("0 active drivers"), so such a kernel is used only in processes that run Triton interpreted. Anywhere
else the original code runs (said at debug level by :mod:`kernelevo.dispatch`). The decision is
:func:`unavailable_reason`, a pure function of the envelope and :class:`RuntimeFacts`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_TRUE = frozenset({"1", "true", "on", "yes"})  # what Triton's own getenv_bool accepts (case-insensitive)


@dataclass(frozen=True)
class RuntimeFacts:
    """What this process offers: Triton interpreted or not, and the capabilities of its CUDA devices
    (an empty tuple when there is no usable CUDA device). Capabilities are read only when asked for."""

    triton_interpreted: bool
    cuda_capabilities: Callable[[], tuple[tuple[int, int], ...]]


def unavailable_reason(envelope: Mapping[str, Any], facts: RuntimeFacts) -> str | None:
    """None when a kernel with this envelope can run here, else why not (a sentence for the debug log)."""
    device_type = envelope.get("device_type", "cuda")
    backend = envelope.get("backend") or "triton"
    if device_type == "cpu":
        if backend != "triton":
            return f"it was verified on the cpu with the {backend} backend, which has no CPU runtime"
        if not facts.triton_interpreted:
            return ("it was verified on the cpu under the Triton interpreter, and this process does not run "
                    "Triton interpreted (TRITON_INTERPRET=1 is not set)")
        return None
    if device_type == "cuda":
        if facts.triton_interpreted and backend == "triton":
            return "it was verified compiled on cuda, and this process runs Triton interpreted (TRITON_INTERPRET=1)"
        available = facts.cuda_capabilities()
        if not available:
            return "it was verified on cuda, and this process has no usable CUDA device"
        verified = envelope.get("capabilities")
        if verified is not None and not {tuple(c) for c in verified} & set(available):
            return (f"it was verified on capabilities {sorted(tuple(c) for c in verified)}, and this process's "
                    f"devices have {sorted(set(available))}")
        return None
    return f"it was verified on device type {device_type!r}, which kernelevo does not dispatch to"


def triton_interpreted(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether Triton runs interpreted in this process (Triton's own knob when it is already imported)."""
    triton = sys.modules.get("triton")
    knobs = getattr(triton, "knobs", None)
    if knobs is not None:
        return bool(knobs.runtime.interpret)
    return environ.get("TRITON_INTERPRET", "").strip().lower() in _TRUE


def _cuda_capabilities() -> tuple[tuple[int, int], ...]:
    import torch

    try:
        if not torch.cuda.is_available():
            return ()
        return tuple((int(major), int(minor)) for major, minor in
                     (torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())))
    except Exception:  # a broken CUDA setup must not break the user's program: the original runs
        return ()


def runtime_facts() -> RuntimeFacts:
    """The facts of this process (the edge: environment, loaded modules, CUDA)."""
    return RuntimeFacts(triton_interpreted=triton_interpreted(), cuda_capabilities=_cuda_capabilities)
