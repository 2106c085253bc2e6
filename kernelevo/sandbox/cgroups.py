"""cgroup v2 limits for sandboxes, where the host delegates a cgroup to us.

A sandbox gets its own child cgroup with ``memory.max`` (swap off), ``pids.max`` and, on kernels that
have it, ``cgroup.kill``: the kernel enforces the memory cap (an OOM kill, reported as such) and a fork
bomb stops at the pid limit. The parent directory is ``KERNELEVO_CGROUP_PARENT`` when set, otherwise
this process's own cgroup v2 directory when the memory and pids controllers are already enabled for its
children there (e.g. the root cgroup of a VM, or a systemd unit with ``Delegate=yes``). Elsewhere there
is no cgroup and the caller falls back to rlimits and its own memory watchdog.
"""

from __future__ import annotations

import os
import secrets
import signal
from pathlib import Path

REQUIRED_CONTROLLERS = frozenset({"memory", "pids"})


class CgroupError(RuntimeError):
    """The configured cgroup cannot be used; the message says why and what to set."""


def cgroup2_mount(mounts: str | None = None) -> Path | None:
    """Where the unified (v2) hierarchy is mounted, if anywhere."""
    text = mounts if mounts is not None else _read("/proc/self/mounts")
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[2] == "cgroup2":
            return Path(parts[1])
    return None


def own_cgroup(proc_cgroup: str | None = None) -> str | None:
    """This process's path in the v2 hierarchy (the ``0::/path`` line of /proc/self/cgroup)."""
    text = proc_cgroup if proc_cgroup is not None else _read("/proc/self/cgroup")
    for line in text.splitlines():
        if line.startswith("0::"):
            return line[3:] or "/"
    return None


def usable_parent(directory: Path) -> str | None:
    """None when sandboxes can be created under ``directory``; otherwise why not."""
    if not directory.is_dir():
        return f"{directory} is not a directory"
    enabled = set(_read(directory / "cgroup.subtree_control").split())
    missing = REQUIRED_CONTROLLERS - enabled
    if missing:
        return f"{directory}/cgroup.subtree_control does not enable {', '.join(sorted(missing))}"
    if not os.access(directory, os.W_OK):
        return f"{directory} is not writable by this user"
    return None


def find_parent(configured: Path | None) -> tuple[Path | None, str]:
    """The delegated parent directory (or None) and a sentence saying which and why."""
    if configured is not None:
        problem = usable_parent(configured)
        if problem:
            raise CgroupError(f"KERNELEVO_CGROUP_PARENT={configured}: {problem}; delegate a cgroup v2 subtree with "
                              "the memory and pids controllers to this user, or unset the variable")
        return configured, f"cgroup v2 under {configured} (KERNELEVO_CGROUP_PARENT)"
    mount, own = cgroup2_mount(), own_cgroup()
    if mount is None or own is None:
        return None, "no cgroup v2 hierarchy: memory is capped by rlimits and a watchdog instead"
    directory = mount / own.lstrip("/")
    problem = usable_parent(directory)
    if problem:
        return None, f"cgroup v2 not delegated ({problem}): memory is capped by rlimits and a watchdog instead"
    return directory, f"cgroup v2 under {directory}"


class SandboxCgroup:
    """One sandbox's cgroup: created with its limits, joined by the sandbox, removed when it ends."""

    def __init__(self, parent: Path, name: str, memory_mb: int | None, pids_max: int | None):
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:40]
        self.path = parent / f"kernelevo-{safe}-{secrets.token_hex(4)}"
        self.path.mkdir()
        if memory_mb is not None:
            (self.path / "memory.max").write_text(str(memory_mb * 1024 * 1024))
            _try_write(self.path / "memory.swap.max", "0")
        if pids_max is not None:
            (self.path / "pids.max").write_text(str(pids_max))

    def add(self, pid: int) -> None:
        (self.path / "cgroup.procs").write_text(str(pid))

    def events(self) -> dict[str, int]:
        """``memory.events`` as numbers (``oom_kill`` > 0: the kernel killed a process for memory)."""
        values = {}
        for line in _read(self.path / "memory.events").splitlines():
            key, _, value = line.partition(" ")
            if value.isdigit():
                values[key] = int(value)
        return values

    def memory_mb(self) -> float:
        """Peak memory use where the kernel reports it (memory.peak), else current use."""
        for name in ("memory.peak", "memory.current"):
            text = _read(self.path / name).strip()
            if text.isdigit():
                return int(text) / 2**20
        return 0.0

    def kill(self) -> None:
        """Kill every process in the cgroup (cgroup.kill, else one by one)."""
        if not _try_write(self.path / "cgroup.kill", "1"):
            for pid in _read(self.path / "cgroup.procs").split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, PermissionError, ValueError):
                    pass

    def remove(self) -> None:
        try:
            self.path.rmdir()
        except OSError:
            pass  # processes still exiting; the directory is empty once they are gone


def _read(path: str | Path) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _try_write(path: Path, text: str) -> bool:
    try:
        path.write_text(text)
        return True
    except OSError:
        return False
