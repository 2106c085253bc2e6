"""The offline proposer as the search uses it: its work (tracing the task, which imports the user's op)
runs in a sandboxed process; this side only sends requests and reads proposals as text.

One process per proposer object, started on first use and ended by :meth:`close` (or when this process
exits: the sandbox dies with its parent). Thread-safe: the search asks from several threads; requests
are served one at a time (tracing is not thread-safe anyway).
"""

from __future__ import annotations

import dataclasses
import tempfile
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from kernelevo.search.offline.analysis import UnsupportedOp
from kernelevo.search.proposer import Proposal, ProposalRequest

if TYPE_CHECKING:
    from evaluator.processes import Worker

TIMEOUT_S = 600.0


class ProposerReply(BaseModel):
    """A reply of the proposer's process, checked before use: that process runs the user's task code."""

    ok: bool = False
    message: str = "failed"
    proposals: list[Proposal] = []
    strategies: list[str] = []
    unsupported: list[UnsupportedOp] | None = None


class SandboxedOfflineProposer:
    """Writes Triton candidates for pointwise, row-reduction and matmul-epilogue ops (see
    :mod:`kernelevo.search.offline.proposer`), from a sandboxed process."""

    name = "offline"
    operators = frozenset({"fresh", "mutate", "tune", "crossover"})  # repairing a kernel needs a model

    def __init__(self, memory_mb: int = 8192) -> None:
        self._memory_mb = memory_mb
        self._lock = threading.Lock()
        self._worker: Worker | None = None
        self._roots: tuple[Path, ...] | None = None
        self._tmp = tempfile.TemporaryDirectory(prefix="kernelevo-proposer-")
        self._finalizer = weakref.finalize(self, SandboxedOfflineProposer._stop, [None], self._tmp)

    @staticmethod
    def _stop(holder: list[Worker | None], tmp: tempfile.TemporaryDirectory[str]) -> None:
        if holder[0] is not None:
            holder[0].kill()
        tmp.cleanup()

    def _ensure(self, task_source: str) -> Worker:
        from evaluator import processes
        from evaluator.roles import task_source_roots

        roots = tuple(task_source_roots(task_source))  # only roots this process vouched for (a generated task's)
        if self._worker is not None and self._roots is not None and set(roots) <= set(self._roots):
            return self._worker
        if self._worker is not None:  # a task from another repository: a process that can read it
            self._worker.kill()
        worker = processes.spawn_worker("proposer", "cpu", Path(self._tmp.name), self._memory_mb, read_only=roots)
        worker.wait_ready(TIMEOUT_S)
        self._worker, self._roots = worker, roots
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, SandboxedOfflineProposer._stop, [worker], self._tmp)
        return worker

    def _ask(self, task_source: str, request: dict[str, Any]) -> ProposerReply:
        from evaluator import processes

        with self._lock:
            worker = self._ensure(task_source)
            try:
                reply = worker.request(request, TIMEOUT_S)
            except (processes.WorkerDied, processes.WorkerTimeout, processes.WorkerMemoryExceeded) as exc:
                self._worker = None
                tail = worker.log_tail(1500)
                return ProposerReply(message=f"the offline proposer's process failed ({exc}); its output: {tail}")
        try:
            return ProposerReply.model_validate(reply)
        except ValidationError as exc:
            return ProposerReply(message=f"the offline proposer's process sent a malformed reply ({exc})")

    def propose(self, request: ProposalRequest) -> list[Proposal]:
        """Up to ``request.count`` proposals; a failure is one Proposal whose ``error`` says what happened."""
        reply = self._ask(request.task_source, {"op": "propose", "request": dataclasses.asdict(request)})
        if not reply.ok:
            return [Proposal(source="", operator=request.operator, backend=request.backend, model=self.name,
                             error=f"offline proposer, op {request.op_name}: {reply.message}")]
        return reply.proposals

    def strategies(self, task_source: str) -> list[str]:
        """The MAP-Elites cells the offline proposer can fill for a task (empty when unsupported)."""
        reply = self._ask(task_source, {"op": "strategies", "task_source": task_source})
        return reply.strategies if reply.ok else []

    def unsupported(self, task_source: str) -> list[UnsupportedOp] | None:
        """The ATen ops of the task the offline generator does not lower (traced in the sandbox; see
        :func:`kernelevo.search.offline.analysis.unsupported_ops`), for the search to report before any
        baseline; None when the proposer's process cannot answer (then nothing is known either way)."""
        reply = self._ask(task_source, {"op": "unsupported", "task_source": task_source})
        return reply.unsupported if reply.ok else None

    def abort(self) -> None:
        """Kill the proposer's process without waiting for the call in flight, which then sees it die and returns
        at once (its descriptors are left to the call; the next call starts a fresh process)."""
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.process.kill()

    def close(self) -> None:
        with self._lock:
            self._finalizer()
            self._worker = None
