"""Starting a process inside its sandbox, and ending it with everything it started.

:func:`spawn` starts ``command`` under a :class:`~kernelevo.sandbox.policy.SandboxPolicy`: bubblewrap
with the policy's view, inside a fresh cgroup when one is delegated (bwrap waits on ``--block-fd`` until
it has been moved there, so no process of the sandbox ever runs outside it). With
``KERNELEVO_ISOLATION=off`` it starts the command directly, still with only the policy's environment,
in a new session. :class:`Sandboxed` kills the whole sandbox (cgroup, else bwrap, whose death takes
the PID namespace with it, else the process group).
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from kernelevo.sandbox.cgroups import CgroupError, SandboxCgroup
from kernelevo.sandbox.policy import SandboxPolicy, bwrap_argv
from kernelevo.sandbox.probe import IsolationMode, IsolationReport


@dataclass
class Sandboxed:
    """A started sandbox: the process we hold (bwrap, or the command itself when isolation is off)."""

    proc: subprocess.Popen
    report: IsolationReport
    cgroup: SandboxCgroup | None = None
    _killed: bool = field(default=False)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout: float | None = None) -> int:
        return self.proc.wait(timeout)

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def oom_killed(self) -> bool:
        """True when the kernel killed a process of this sandbox for exceeding its memory cap."""
        return self.cgroup is not None and self.cgroup.events().get("oom_kill", 0) > 0

    def memory_mb(self) -> float | None:
        """Memory of the whole sandbox as the kernel counts it (None without a cgroup)."""
        return self.cgroup.memory_mb() if self.cgroup is not None else None

    def kill(self) -> None:
        """Kill every process of the sandbox and reap ours."""
        if self.cgroup is not None:
            self.cgroup.kill()
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # bwrap (or the command) leads its own process group
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.kill()
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        if self.cgroup is not None:
            self.cgroup.remove()
        self._killed = True


def host_view_path(policy: SandboxPolicy, path: Path) -> Path:
    """``path`` as it is without a sandbox: under a bind's target it names the same place under the bind's source,
    which is where that folder is when nothing is mounted (the most specific bind wins)."""
    for bind in sorted((b for b in policy.binds if b.target is not None), key=lambda b: -len(b.inside.parts)):
        if path == bind.inside or bind.inside in path.parents:
            return bind.source / path.relative_to(bind.inside)
    return path


def host_view_env(policy: SandboxPolicy) -> dict[str, str]:
    """The environment without a sandbox: a value naming a place inside it (``HOME``) names that place on the
    host instead; a process given no GPU is shown none (without a sandbox the host's devices are in reach)."""
    env = {name: str(host_view_path(policy, Path(value))) if value.startswith("/") else value
           for name, value in policy.env.items()}
    if not policy.gpu:
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def spawn(policy: SandboxPolicy, command: Sequence[str], report: IsolationReport, *,
          stdin: int | IO[Any] | None = None, stdout: int | IO[Any] | None = None,
          stderr: int | IO[Any] | None = None, pass_fds: Sequence[int] = ()) -> Sandboxed:
    """Start ``command`` in its sandbox (see the module docstring)."""
    if report.mode is IsolationMode.OFF:
        proc = subprocess.Popen(list(command), stdin=stdin, stdout=stdout, stderr=stderr, env=host_view_env(policy),
                                cwd=str(host_view_path(policy, policy.cwd)), pass_fds=tuple(pass_fds),
                                start_new_session=True, close_fds=True)
        return Sandboxed(proc, report)
    assert report.bwrap is not None and report.working
    cgroup = None
    if report.cgroup_parent is not None:
        try:
            cgroup = SandboxCgroup(report.cgroup_parent, policy.name, policy.memory_mb, policy.pids_max)
        except OSError as exc:
            raise CgroupError(f"cannot create a cgroup under {report.cgroup_parent}: {exc}") from exc
    block_read, block_write = os.pipe()
    try:
        argv = bwrap_argv(policy, command, bwrap=report.bwrap, block_fd=block_read,
                          disable_userns=report.disable_userns,
                          prlimit=report.prlimit if cgroup is None else None)
        proc = subprocess.Popen(argv, stdin=stdin, stdout=stdout, stderr=stderr, env={"PATH": "/usr/bin:/bin"},
                                pass_fds=(*pass_fds, block_read), start_new_session=True, close_fds=True)
    except BaseException:
        os.close(block_write)
        if cgroup is not None:
            cgroup.remove()
        raise
    finally:
        os.close(block_read)
    sandbox = Sandboxed(proc, report, cgroup)
    try:
        if cgroup is not None:
            cgroup.add(proc.pid)
        os.write(block_write, b"go")
    except BaseException:
        sandbox.kill()
        raise
    finally:
        os.close(block_write)
    return sandbox
