"""``OfflineProposer``: kernels from the op's traced graph, no model involved.

Operators: ``fresh`` (and ``crossover``) generate one candidate per applicable strategy (MAP-Elites
cell), in a rotation fixed by the seed, or a seeded variant of a cell's launch parameters
(``fresh_cell``); ``tune`` rewrites the launch parameters of the first parent
(any Triton candidate, LLM-written ones included); ``mutate`` does the same or, for a parent this
proposer wrote, moves it to another strategy; ``repair`` is left to the LLM. Before a candidate is
proposed its launches are checked on the meta device against every scored case and the device's limits
(:mod:`kernelevo.search.offline.launches`): strategies and launch parameters that cannot run are never
offered. Graphs outside the known patterns give ``[]`` plus one Proposal whose ``error`` lists every ATen
op that is not lowered, where it is in the user's op and what the user can do.
"""

from __future__ import annotations

import hashlib
import random
import threading
from typing import Any

from kernelevo.search.offline.analysis import (
    UnsupportedOp,
    unsupported_in_lowering,
    unsupported_message,
    unsupported_ops,
)
from kernelevo.search.offline.launches import infeasible, shared_memory_limit
from kernelevo.search.offline.lower import Unsupported, lower
from kernelevo.search.offline.module import applicable, generate
from kernelevo.search.offline.trace import TracedTask, TraceError, trace_task
from kernelevo.search.offline.tune import find_knobs, knob_shared_memory, tune_source
from kernelevo.search.proposer import Parent, Proposal, ProposalRequest

ATTEMPTS = 12  # tuned variants drawn per slot until one is feasible and new
FRESH_VARIANTS = 1  # seeded variants per cell a fresh request may draw besides the cell's defaults


def fresh_cell(n_cells: int, seed: int, index: int) -> tuple[int, int]:
    """(cell, variant) of the ``index``-th candidate a fresh request with ``seed`` gets: variant 0 is the
    cell's default launch parameters, 1..FRESH_VARIANTS seeded variants of them. A pure function of the
    request, so the search stays reproducible with any number of requests in flight: seeds walk the cells'
    defaults first (seed 0, 1, ... n-1) and then their variants, so fresh requests keep giving new candidates
    after every default has been judged instead of repeating them (which stopped searches as exhausted)."""
    position = (seed + index) % (n_cells * (1 + FRESH_VARIANTS))
    return position % n_cells, position // n_cells


class OfflineProposer:
    """Writes Triton candidates for pointwise, row-reduction and matmul-epilogue ops."""

    name = "offline"
    operators = frozenset({"fresh", "mutate", "tune", "crossover"})  # repairing a kernel needs a model

    def __init__(self) -> None:
        self._lock = threading.RLock()  # make_fx tracing is not thread-safe
        self._traces: dict[str, TracedTask | str] = {}
        self._feasible: dict[tuple[str, str, tuple[tuple[str, int], ...], int | None], str | None] = {}

    # -- helpers -----------------------------------------------------------------------------
    @staticmethod
    def _key(task_source: str) -> str:
        return hashlib.sha256(task_source.encode()).hexdigest()

    def _trace(self, task_source: str) -> TracedTask | str:
        key = self._key(task_source)
        with self._lock:
            if key not in self._traces:
                try:
                    self._traces[key] = trace_task(task_source)
                except TraceError as exc:
                    self._traces[key] = f"could not trace the task: {exc}"
            return self._traces[key]

    def unsupported(self, task_source: str) -> list[UnsupportedOp]:
        """The ATen ops of the task's forward the offline generator does not lower (see
        :func:`kernelevo.search.offline.analysis.unsupported_ops`), or else the call the lowering refuses in
        the form it is used (a tensor op on a size); empty when the graph lowers or the task cannot be
        traced (``propose`` then says why)."""
        traced = self._trace(task_source)
        if isinstance(traced, str):
            return []
        unknown = unsupported_ops(traced)
        if unknown:
            return unknown
        try:
            program = lower(traced)
        except Unsupported as exc:
            return [unsupported_in_lowering(traced, str(exc), exc.node)]
        return self._refused_by_every_strategy(traced, program)

    @staticmethod
    def _refused_by_every_strategy(traced: TracedTask, program: Any) -> list[UnsupportedOp]:
        """The graph lowers but every strategy's generator refuses it (a slice used per row): said as early.
        Only refusals of the generator count, which no GPU changes; a strategy that merely does not fit a
        device's limits is the search's to drop (``_cells``), on the device it runs on."""
        from kernelevo.search.offline.kernels import analyse

        try:
            strategies = applicable(analyse(program), traced.widest_case_dim)
        except Unsupported as exc:  # the graph as a whole (no output of the op's full rank ...)
            return [UnsupportedOp(aten="", why=f"no strategy can write a kernel for it ({exc})")]
        refused = []
        for strategy in strategies:
            try:
                generate(traced, strategy, "op", None)
            except Unsupported as exc:
                refused.append(f"{strategy}: {exc}")
        if not strategies or len(refused) < len(strategies):
            return []
        return [UnsupportedOp(aten="", why="no strategy can write a kernel for it (" + "; ".join(refused) + ")")]

    def _why_not(self, traced: TracedTask, strategy: str, op_name: str, params: dict[str, int] | None,
                 hardware: dict[str, Any]) -> tuple[str, str | None]:
        """(source, None) for a candidate that can run every scored case, else (source, the reason)."""
        source = generate(traced, strategy, op_name, params)
        key = (self._key(traced.source), strategy, tuple(sorted((params or {}).items())),
               shared_memory_limit(hardware))
        if key not in self._feasible:
            self._feasible[key] = infeasible(source, traced.init_inputs, traced.meta_cases, hardware)
        return source, self._feasible[key]

    def _cells(self, traced: TracedTask, op_name: str, hardware: dict[str, Any]) -> tuple[list[str], list[str]]:
        """(feasible strategies best first, why each other applicable strategy was dropped)."""
        from kernelevo.search.offline.kernels import analyse

        cells, dropped = [], []
        for strategy in applicable(analyse(lower(traced)), traced.widest_case_dim):
            try:
                _, reason = self._why_not(traced, strategy, op_name, None, hardware)
            except Unsupported as exc:
                reason = str(exc)
            if reason is None:
                cells.append(strategy)
            else:
                dropped.append(f"{strategy}: {reason}")
        return cells, dropped

    def strategies(self, task_source: str, hardware: dict[str, Any] | None = None) -> list[str]:
        """The MAP-Elites cells this proposer can fill for a task (empty when unsupported)."""
        traced = self._trace(task_source)
        if isinstance(traced, str):
            return []
        with self._lock:
            try:
                return self._cells(traced, "op", hardware or {})[0]
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

    def _unsupported_error(self, request: ProposalRequest, traced: TracedTask, exc: Unsupported) -> list[Proposal]:
        ops = self.unsupported(request.task_source) or [unsupported_in_lowering(traced, str(exc), exc.node)]
        return self._error(request, unsupported_message(ops))

    def _fresh(self, request: ProposalRequest) -> list[Proposal]:
        traced = self._trace(request.task_source)
        if isinstance(traced, str):
            return self._error(request, traced)
        with self._lock:
            try:
                cells, dropped = self._cells(traced, request.op_name, request.hardware)
                if not cells:
                    return self._error(request, "no strategy can run every scored case: " + "; ".join(dropped))
                out = []
                for i in range(max(1, request.count)):
                    cell, variant = fresh_cell(len(cells), request.seed, i)
                    strategy = cells[cell]
                    source, note = generate(traced, strategy, request.op_name), ""
                    if variant:  # beyond a cell's defaults: a seeded, feasible variant of its launch parameters
                        source, note = self._tuned_own(traced, request, strategy, source,
                                                       request.seed * 1000 + i * 7 + variant)
                    out.append(Proposal(source=source, strategy=strategy, operator=request.operator,
                                        backend="triton", model=self.name, raw_reply=note))
                return out
            except Unsupported as exc:
                return self._unsupported_error(request, traced, exc)

    def _tuned_own(self, traced: TracedTask, request: ProposalRequest, strategy: str, source: str,
                   seed: int) -> tuple[str, str]:
        """A feasible tuned variant of one of this proposer's own candidates (the source itself if none)."""
        rng = random.Random(seed)
        for _ in range(ATTEMPTS):
            tuned, changes = tune_source(source, rng.randrange(2**31))
            params = {k.name: k.value for k in find_knobs(tuned) if k.where == "constant"}
            if not changes or tuned == source:
                continue
            _, reason = self._why_not(traced, strategy, request.op_name, params, request.hardware)
            if reason is None:
                return generate(traced, strategy, request.op_name, params), "; ".join(changes)
        return source, ""

    def _own_parent(self, traced: TracedTask | str, parent: Parent, op_name: str) -> bool:
        """Whether the parent is exactly what this proposer writes for its strategy and launch parameters
        (only then are its launches read on the meta device: that runs the source)."""
        if isinstance(traced, str) or not parent.strategy:
            return False
        params = {k.name: k.value for k in find_knobs(parent.source) if k.where == "constant"}
        try:
            return generate(traced, parent.strategy, op_name, params) == parent.source
        except (Unsupported, KeyError):
            return False

    def _tune(self, request: ProposalRequest) -> list[Proposal]:
        triton_parents = [p for p in request.parents if p.backend == "triton" and p.source]
        if not triton_parents:
            return self._error(request, "tune needs a Triton parent")
        rng = random.Random(request.seed)
        traced = self._trace(request.task_source) if request.task_source else "no task"
        limit = shared_memory_limit(request.hardware)
        out: list[Proposal] = []
        with self._lock:
            for i in range(max(1, request.count)):
                parent = triton_parents[i % len(triton_parents)]
                own = self._own_parent(traced, parent, request.op_name)
                if own and request.operator == "mutate" and rng.random() < 0.5:
                    moved = self._other_strategy(traced, parent, request, rng)  # type: ignore[arg-type]
                    if moved is not None:
                        out.append(moved)
                        continue
                proposal = None
                for _ in range(ATTEMPTS):
                    source, changes = tune_source(parent.source, rng.randrange(2**31))
                    if not changes:
                        return out or self._error(request, "the parent has no tunable launch parameters")
                    if own:
                        params = {k.name: k.value for k in find_knobs(source) if k.where == "constant"}
                        _, reason = self._why_not(traced, parent.strategy, request.op_name, params,  # type: ignore[arg-type]
                                                  request.hardware)
                    else:  # someone else's source: only what its knobs say, never run it here
                        need = knob_shared_memory(source)
                        reason = "shared memory" if limit is not None and need is not None and need > limit else None
                    if reason is None:
                        proposal = Proposal(source=source, strategy=parent.strategy, operator="tune",
                                            backend="triton", model=self.name, raw_reply="; ".join(changes))
                        break
                if proposal is None:
                    return out or self._error(request, "no feasible launch parameters near the parent's")
                out.append(proposal)
        return out

    def _other_strategy(self, traced: TracedTask, parent: Parent, request: ProposalRequest,
                        rng: random.Random) -> Proposal | None:
        """The parent's op under another feasible strategy (a step to a neighbouring MAP-Elites cell)."""
        try:
            cells, _ = self._cells(traced, request.op_name, request.hardware)
        except Unsupported:
            return None
        others = [c for c in cells if c != parent.strategy]
        if not others:
            return None
        strategy = rng.choice(others)
        return Proposal(source=generate(traced, strategy, request.op_name), strategy=strategy, operator="mutate",
                        backend="triton", model=self.name, raw_reply=f"strategy {parent.strategy} -> {strategy}")
