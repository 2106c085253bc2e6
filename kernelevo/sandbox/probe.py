"""Can this machine isolate untrusted code? Find out once, say exactly what is enforced, refuse when not.

:func:`isolation` runs a throw-away bubblewrap sandbox (user, PID, network, IPC and UTS namespaces)
and reports an :class:`IsolationReport`. When it fails, :func:`require_isolation` raises
:class:`IsolationUnavailable` naming what is missing and how to fix it; on a trusted single-user machine
``KERNELEVO_ISOLATION=off`` runs untrusted code without the sandbox (scrubbed environment, own session
and rlimits only), and every verdict records that it did.
"""

from __future__ import annotations

import enum
import logging
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel

from kernelevo.sandbox import cgroups

log = logging.getLogger(__name__)

HOW_TO_FIX = (
    "Install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`) and allow "
    "unprivileged user namespaces (`sysctl kernel.unprivileged_userns_clone=1` on Debian, "
    "`kernel.apparmor_restrict_unprivileged_userns=0` on Ubuntu 24.04+; in a container, a seccomp profile that "
    "permits clone/unshare with CLONE_NEWUSER, see docs/security.md). On a trusted single-user machine you may "
    "instead set KERNELEVO_ISOLATION=off: untrusted code then runs WITHOUT a sandbox."
)


class IsolationMode(str, enum.Enum):
    REQUIRED = "required"  # refuse to run untrusted code unless the sandbox works (the default)
    OFF = "off"  # trusted single-user machines only: no namespaces, no filesystem view


class IsolationUnavailable(RuntimeError):
    """The sandbox cannot be set up here; the message says what failed and what to do."""


class IsolationReport(BaseModel):
    """What untrusted code running here is subject to (recorded in verdicts and job records)."""

    mode: IsolationMode
    bwrap: str | None = None
    working: bool = False
    cgroup_parent: Path | None = None
    cgroup_note: str = ""
    problem: str | None = None
    disable_userns: bool = False  # this bubblewrap can forbid nested user namespaces
    prlimit: str | None = None  # util-linux prlimit: a task limit where no cgroup caps the sandbox

    def enforced(self) -> list[str]:
        """The protections in force, as short phrases for reports."""
        if self.mode is IsolationMode.OFF or not self.working:
            return ["scrubbed environment", "own session", "rlimits"]
        items = ["bubblewrap: user, PID, network, IPC and UTS namespaces", "no capabilities",
                 "read-only system view without home directories, /etc secrets or other processes",
                 "private writable temp dir", "scrubbed environment"]
        items.append(f"cgroup v2 memory/pids limits ({self.cgroup_parent})" if self.cgroup_parent
                     else "memory watchdog + rlimits (no delegated cgroup v2)")
        if self.disable_userns:
            items.append("no nested user namespaces")
        return items


def _try_bwrap(bwrap: str, *extra: str) -> str | None:
    """None when a minimal sandbox starts and runs a command; else the error it printed."""
    argv = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts", *extra,
            "--die-with-parent", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
            "--", "/bin/sh", "-c", "exit 0"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{bwrap} could not be run ({exc})"
    if done.returncode != 0:
        return (done.stderr or done.stdout).strip() or f"exit status {done.returncode}"
    return None


@lru_cache(maxsize=4)
def isolation(mode: IsolationMode = IsolationMode.REQUIRED, cgroup_parent: Path | None = None) -> IsolationReport:
    """Probe the machine once per (mode, cgroup parent) and describe what is enforced."""
    if mode is IsolationMode.OFF:
        return IsolationReport(mode=mode, problem="KERNELEVO_ISOLATION=off: untrusted code runs without a sandbox")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return IsolationReport(mode=mode, problem="bubblewrap (`bwrap`) is not installed")
    problem = _try_bwrap(bwrap)
    if problem is not None:
        return IsolationReport(mode=mode, bwrap=bwrap, problem=f"bubblewrap cannot create namespaces here: {problem}")
    parent, note = cgroups.find_parent(cgroup_parent)
    return IsolationReport(mode=mode, bwrap=bwrap, working=True, cgroup_parent=parent, cgroup_note=note,
                           disable_userns=_try_bwrap(bwrap, "--disable-userns") is None,
                           prlimit=shutil.which("prlimit"))


def current() -> IsolationReport:
    """The report for this process's settings (``KERNELEVO_ISOLATION``, ``KERNELEVO_CGROUP_PARENT``)."""
    from kernelevo.settings import get_settings

    settings = get_settings()
    return isolation(IsolationMode(settings.isolation), settings.cgroup_parent)


def require_isolation(what: str) -> IsolationReport:
    """The report, or :class:`IsolationUnavailable` when untrusted code (``what``) must not run here."""
    report = current()
    if report.mode is IsolationMode.OFF:
        _warn_off_once()
        return report
    if not report.working:
        raise IsolationUnavailable(f"refusing to run {what} without a sandbox: {report.problem}. {HOW_TO_FIX}")
    return report


@lru_cache(maxsize=1)
def _warn_off_once() -> None:
    log.warning("KERNELEVO_ISOLATION=off: candidate and repository code run without a sandbox (trusted "
                "single-user machines only)")
