"""``OfflineProposer``: kernels from the op's traced graph, no model involved.

Operators: ``fresh`` (and ``crossover``) generate one candidate per applicable strategy (MAP-Elites
cell), in a rotation fixed by the seed; ``tune`` and ``mutate`` rewrite the launch parameters of the
first parent (any Triton candidate, LLM-written ones included); ``repair`` is left to the LLM.
Graphs outside the known patterns give ``[]`` plus one Proposal whose ``error`` says which op.
"""

from __future__ import annotations

import hashlib
import random
import threading

from kernelevo.search.offline.lower import Unsupported, lower
from kernelevo.search.offline.module import applicable, generate
from kernelevo.search.offline.trace import TracedTask, TraceError, trace_task
from kernelevo.search.offline.tune import tune_source
from kernelevo.search.proposer import Proposal, ProposalRequest


class OfflineProposer:
    """Writes Triton candidates for pointwise, row-reduction and matmul-epilogue ops."""

    name = "offline"

    def __init__(self) -> None:
        self._lock = threading.Lock()  # make_fx tracing is not thread-safe
        self._traces: dict[str, TracedTask | str] = {}

    # -- helpers -----------------------------------------------------------------------------
    def _trace(self, task_source: str) -> TracedTask | str:
        key = hashlib.sha256(task_source.encode()).hexdigest()
        with self._lock:
            if key not in self._traces:
                try:
                    self._traces[key] = trace_task(task_source)
                except TraceError as exc:
                    self._traces[key] = f"could not trace the task: {exc}"
            return self._traces[key]

    def strategies(self, task_source: str) -> list[str]:
        """The MAP-Elites cells this proposer can fill for a task (empty when unsupported)."""
        traced = self._trace(task_source)
        if isinstance(traced, str):
            return []
        with self._lock:
            try:
                from kernelevo.search.offline.kernels import analyse

                return applicable(analyse(lower(traced)), traced.widest_case_dim)
            except Unsupported:
                return []

    def _error(self, request: ProposalRequest, message: str) -> list[Proposal]:
        return [Proposal(source="", operator=request.operator, backend=request.backend, model=self.name,
                         error=f"offline proposer, op {request.op_name}: {message}")]

    # -- the interface -----------------------------------------------------------------------
    def propose(self, request: ProposalRequest) -> list[Proposal]:
        """Return up to ``request.count`` candidates; never raises for unsupported ops."""
        if request.backend not in ("triton", "any"):
            return self._error(request, f"writes Triton kernels only (backend {request.backend!r} asked)")
        if request.operator in ("tune", "mutate"):
            return self._tune(request)
        if request.operator == "repair":
            return self._error(request, "cannot repair a kernel (use the llm proposer for repairs)")
        return self._fresh(request)

    def _fresh(self, request: ProposalRequest) -> list[Proposal]:
        traced = self._trace(request.task_source)
        if isinstance(traced, str):
            return self._error(request, traced)
        with self._lock:
            try:
                from kernelevo.search.offline.kernels import analyse

                cells = applicable(analyse(lower(traced)), traced.widest_case_dim)
                start = request.seed % len(cells)
                order = cells[start:] + cells[:start]
                out = []
                for i in range(max(1, request.count)):
                    strategy = order[i % len(order)]
                    source = generate(traced, strategy, request.op_name)
                    note = ""
                    if i >= len(order):  # more asked than cells: tuned variants of the same cells
                        source, changes = tune_source(source, request.seed * 1000 + i)
                        note = "; ".join(changes)
                    out.append(Proposal(source=source, strategy=strategy, operator=request.operator,
                                        backend="triton", model=self.name, raw_reply=note))
                return out
            except Unsupported as exc:
                return self._error(request, f"unsupported graph: {exc}")

    def _tune(self, request: ProposalRequest) -> list[Proposal]:
        triton_parents = [p for p in request.parents if p.backend == "triton" and p.source]
        if not triton_parents:
            return self._error(request, "tune needs a Triton parent")
        rng = random.Random(request.seed)
        out: list[Proposal] = []
        for i in range(max(1, request.count)):
            parent = triton_parents[i % len(triton_parents)]
            source, changes = tune_source(parent.source, rng.randrange(2**31))
            if not changes:
                return out or self._error(request, "the parent has no tunable launch parameters")
            out.append(Proposal(source=source, strategy=parent.strategy, operator="tune", backend="triton",
                                model=self.name, raw_reply="; ".join(changes)))
        return out
