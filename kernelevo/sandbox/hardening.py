"""Hardening of the trusted processes (the bot, workers, the CLI) that hold secrets.

``PR_SET_DUMPABLE`` off: no other process of the same user may read this one's memory or
``/proc/<pid>/environ`` or attach a debugger (the kernel makes those files root-owned). Sandboxed
processes cannot even see us (their own PID namespace); this covers processes outside a sandbox.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger(__name__)

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3


def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name, use_errno=True) if name else None
    except OSError:
        return None


def harden_trusted_process() -> bool:
    """Make this process non-dumpable; True when the kernel confirms it (False off Linux)."""
    libc = _libc()
    if libc is None:
        return False
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        log.warning("prctl(PR_SET_DUMPABLE, 0) failed (errno %d)", ctypes.get_errno())
        return False
    return is_dumpable() is False


def is_dumpable() -> bool | None:
    """Whether this process is dumpable (None where prctl is unavailable)."""
    libc = _libc()
    if libc is None:
        return None
    return bool(libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0))
