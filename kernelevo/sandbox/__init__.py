"""OS isolation for every process that runs code from a user's repository or from a proposer.

Such code runs only in sandboxes that hold nothing of value: no secrets in the environment, no view of
other processes, no network, a private writable temp dir and a read-only view of the system (see
:mod:`kernelevo.sandbox.policy`), enforced by bubblewrap and, where delegated, cgroup v2
(:mod:`kernelevo.sandbox.launch`). :func:`require_isolation` refuses to run untrusted code where the
sandbox cannot be set up (``KERNELEVO_ISOLATION=off`` is the documented override for trusted
single-user machines). Trusted processes make themselves non-dumpable
(:func:`harden_trusted_process`).
"""

from kernelevo.sandbox.hardening import harden_trusted_process
from kernelevo.sandbox.launch import Sandboxed, host_view_path, spawn
from kernelevo.sandbox.policy import SANDBOX_TMP, Bind, SandboxPolicy, gpu_binds, system_binds
from kernelevo.sandbox.probe import (
    IsolationMode,
    IsolationReport,
    IsolationUnavailable,
    current,
    require_isolation,
)

__all__ = [
    "SANDBOX_TMP", "Bind", "IsolationMode", "IsolationReport", "IsolationUnavailable", "SandboxPolicy", "Sandboxed",
    "current",
    "gpu_binds", "host_view_path", "harden_trusted_process", "require_isolation", "spawn", "system_binds",
]
