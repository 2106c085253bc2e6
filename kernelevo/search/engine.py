"""The evolutionary loop: plan slots, gather proposals in a thread pool, judge candidates in order.

Determinism: the loop draws every random choice from one ``random.Random(seed)`` and consumes
proposals in slot order, whatever order the proposer threads finish in; the next generation is
planned (and its proposals requested) while the current one is being evaluated, from the state
that is complete at that point. Durability: proposer replies and verdicts go to the run directory
as they happen; on resume the same plan is replayed and slots/candidates already on disk are
reused instead of asking the proposer or the evaluator again.
"""

from __future__ import annotations

import random
import re
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field, replace
from typing import Any

from evaluator.verdict import NeedsGPU
from kernelevo.search.budget import Budget, Usage, eta_s, stop_reason
from kernelevo.search.config import Evaluator, SearchConfig
from kernelevo.search.feedback import render_feedback
from kernelevo.search.fitness import fitness_of, is_timed, speedups
from kernelevo.search.population import Individual, Population
from kernelevo.search.pricing import Price
from kernelevo.search.proposer import Parent, ProposalRequest, Proposer
from kernelevo.search.result import Progress
from kernelevo.search.rundir import RunDir
from kernelevo.search.slots import Slot, candidate_record, reply_record, source_sha
from kernelevo.search.window import EvaluationWindow

REPLY_GRACE_S = 10.0  # how long a stopping run waits for proposer replies already in flight


@dataclass
class LoopState:
    """Counters of the run, rebuilt identically on replay."""

    usage: Usage = field(default_factory=Usage)
    tokens_in: int = 0
    tokens_out: int = 0
    accepted: int = 0
    duplicates: int = 0
    proposal_errors: int = 0
    generations: int = 0
    eval_s: float = 0.0
    first_accepted_s: float | None = None
    unpriced: set[str] = field(default_factory=set)
    replay_mismatches: int = 0
    slots_consumed: int = 0


class SearchLoop:
    """One search over one op; :meth:`run` returns the stop reason."""

    def __init__(
        self,
        *,
        op_id: str,
        task_source: str,
        proposer: Proposer,
        evaluator: Evaluator,
        run: RunDir,
        budget: Budget,
        config: SearchConfig,
        seed: int,
        backend: str,
        hardware: dict[str, Any],
        prices: dict[str, Price],
        on_progress: Callable[[Progress], None] | None = None,
        should_cancel: Callable[[], bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        evaluations_in_flight: int = 1,
    ) -> None:
        self.op_id, self.task_source, self.proposer, self.evaluator = op_id, task_source, proposer, evaluator
        self.run_dir, self.budget, self.config, self.seed = run, budget, config, seed
        self.backend, self.hardware, self.prices = backend, hardware, prices
        self.on_progress, self.should_cancel = on_progress, should_cancel or (lambda: False)
        self.clock, self.wall = clock, wall
        self.evaluations_in_flight = max(1, evaluations_in_flight)
        self.rng = random.Random(seed)
        self.slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", op_id).strip("._") or "op"  # candidate names in files
        self.population = Population(config.islands, config.island_capacity)
        self.state = LoopState()
        self.seen: dict[str, dict[str, Any]] = {}  # source sha -> first candidate record
        self.logged_slots = {r["slot"]: r for r in run.proposals()}
        self.logged_candidates = {r["id"]: r for r in run.candidates()}
        records = [*self.logged_slots.values(), *self.logged_candidates.values()]
        self.prior_elapsed = max((float(r.get("run_elapsed_s") or 0) for r in records), default=0.0)
        self.session_start = clock()
        self.planned_pending = 0  # slots planned whose replies have not been consumed yet

    # -- time and stopping -------------------------------------------------------------------
    def elapsed(self) -> float:
        return self.prior_elapsed + (self.clock() - self.session_start)

    def _stop(self, spend: bool = True, in_flight: int = 0) -> str | None:
        """Why to stop now; ``spend=False`` ignores tokens and money (already paid for the reply at hand);
        ``in_flight`` candidates being judged count as evaluated."""
        self.state.usage.elapsed_s = self.elapsed()
        budget = self.budget if spend else replace(self.budget, tokens=None, usd=None)
        usage = replace(self.state.usage, candidates=self.state.usage.candidates + in_flight)
        return stop_reason(budget, usage, cancelled=bool(self.should_cancel()))

    def _gate(self, window: EvaluationWindow, spend: bool = True) -> str | None:
        """The stop reason before submitting another candidate. When only the candidates in flight would
        reach a budget, they are absorbed first and the budget is checked on what they really counted."""
        reason = self._stop(spend)
        if reason is None and window.pending and self._stop(spend, in_flight=window.pending):
            window.drain()
            reason = self._stop(spend)
        return reason

    # -- planning and proposing ------------------------------------------------------------------
    def _slot_backend(self, island: int) -> str:
        if self.backend == "any":
            return ("triton", "cuda")[island % 2]
        return self.backend

    def _parent(self, ind: Individual) -> Parent:
        return Parent(ind.source, ind.fitness, ind.feedback, ind.verdict, ind.strategy, ind.backend)

    def _room(self) -> int:
        """How many slots the next generation may have without planning past a budget.

        Uses only counters of consumed replies (so replay plans the same); spend per slot is the
        average so far. Before any reply is in, one generation is requested and nothing ahead of it.
        """
        size, pending, usage = self.config.generation_size, self.planned_pending, self.state.usage
        if self.budget.candidates is not None:
            size = min(size, self.budget.candidates - usage.candidates - pending)
        consumed = self.state.slots_consumed
        for limit, used in ((self.budget.tokens, usage.tokens), (self.budget.usd, usage.cost_usd)):
            if limit is None:
                continue
            if not consumed:
                size = 0 if pending else size
                continue
            per_slot = used / consumed
            if per_slot > 0:
                size = min(size, max(int((limit - used) / per_slot) - pending, 0 if pending else 1))
        return size

    def _plan_generation(self, gen: int, pool: ThreadPoolExecutor) -> list[Slot] | None:
        size = self._room()
        if size <= 0:
            return None
        slots = []
        for index in range(size):
            island = index % self.config.islands
            plan = self.population.plan_slot(island, self.rng)
            slot = Slot(
                f"g{gen}-{index}", gen, index, island, plan.operator, self._slot_backend(island),
                [p.id for p in plan.parents],
            )
            seed = self.rng.randrange(2**31)  # drawn even when replaying, so the stream stays aligned
            slot.logged = self.logged_slots.get(slot.id)
            if slot.logged is not None:
                if slot.logged.get("parent_ids") != slot.parent_ids or slot.logged.get("operator") != slot.operator:
                    self.state.replay_mismatches += 1
            else:
                request = ProposalRequest(
                    op_name=self.op_id, task_source=self.task_source, operator=plan.operator,
                    parents=[self._parent(p) for p in plan.parents], backend=slot.backend,
                    hardware=dict(self.hardware), seed=seed, count=1,
                )
                slot.future = pool.submit(self._propose, slot, request)
            slots.append(slot)
        self.planned_pending += len(slots)
        return slots

    def _propose(self, slot: Slot, request: ProposalRequest) -> dict[str, Any]:
        """Runs in a pool thread: ask the proposer, price the reply, log it durably."""
        t_requested = self.wall()
        error = None
        try:
            proposals = list(self.proposer.propose(request))
        except Exception as exc:  # a proposer must not raise; if it does, the slot is recorded as failed
            proposals, error = [], f"{type(exc).__name__}: {exc}"
        record = reply_record(slot, proposals, error, self.prices)
        record.update(proposer=getattr(self.proposer, "name", ""), t_requested=t_requested, t_received=self.wall(),
                      run_elapsed_s=self.elapsed())
        self.run_dir.append_proposal(record)
        return record

    # -- judging ---------------------------------------------------------------------------------
    def _account_slot(self, reply: dict[str, Any]) -> None:
        for proposal in reply.get("proposals") or []:
            self.state.tokens_in += int(proposal.get("tokens_in") or 0)
            self.state.tokens_out += int(proposal.get("tokens_out") or 0)
            self.state.usage.cost_usd += float(proposal.get("cost_usd") or 0.0)
            if proposal.get("unpriced"):
                self.state.unpriced.add(proposal.get("model") or "?")
        self.state.usage.tokens = self.state.tokens_in + self.state.tokens_out

    def _judge(self, slot: Slot, k: int, proposal: dict[str, Any]) -> dict[str, Any]:
        record = candidate_record(slot, k, proposal)
        cid, source = record["id"], record["source"]
        logged = self.logged_candidates.get(cid)
        if logged is not None and logged.get("source_sha") == record["source_sha"]:
            return {**logged, "replayed": True}
        if logged is not None:
            self.state.replay_mismatches += 1
        if proposal.get("error") or not source.strip():
            record.update(kind="proposal_error", verdict=None, fitness=0.0, accepted=False,
                          detail=proposal.get("error") or "the proposer returned no code")
        elif record["source_sha"] in self.seen:
            first = self.seen[record["source_sha"]]
            record.update(kind="duplicate", duplicate_of=first["id"], verdict=first.get("verdict"),
                          fitness=first.get("fitness", 0.0), accepted=first.get("accepted", False))
        else:
            t0, w0 = self.clock(), self.wall()
            try:
                verdict = self.evaluator.evaluate_source(source, name=f"{self.slug}-{cid}")
            except NeedsGPU as exc:  # e.g. a CUDA candidate in a CPU run: recorded, not fatal to the search
                record.update(kind="proposal_error", verdict=None, fitness=0.0, accepted=False, detail=str(exc))
                record["run_elapsed_s"] = self.elapsed()
                self.run_dir.append_candidate(record)
                return record
            verdict = verdict.to_dict() if hasattr(verdict, "to_dict") else dict(verdict)
            eval_s = self.clock() - t0
            if verdict.get("backend") in ("triton", "cuda", "load_inline"):  # what the evaluator saw wins
                record["backend"] = verdict["backend"]
                record["cell"] = [record["backend"], record["strategy"] or "default"]
            record.update(kind="evaluated", verdict=verdict, fitness=fitness_of(verdict),
                          accepted=verdict.get("verdict") == "accepted", t_eval_start=w0,
                          t_eval_end=self.wall(), eval_s=eval_s)
        record["run_elapsed_s"] = self.elapsed()
        self.run_dir.append_candidate(record)
        return record

    def _prefetch_next(self, rest_of_slot: list[dict[str, Any]], later_slots: list[Slot]) -> None:
        """Let the evaluator load the candidate after the one being judged (its import and inputs overlap
        the current evaluation); only replies that are already here are looked at, nothing waits."""
        prefetch = getattr(self.evaluator, "prefetch", None)
        if prefetch is None:
            return
        upcoming = rest_of_slot[:1]
        if not upcoming and later_slots:
            nxt = later_slots[0]
            if nxt.logged is None and (nxt.future is None or not nxt.future.done()):
                return
            upcoming = (nxt.reply().get("proposals") or [])[:1]
        for proposal in upcoming:
            source = proposal.get("source") or ""
            if source.strip() and not proposal.get("error") and source_sha(source) not in self.seen:
                prefetch(source)

    def _absorb(self, record: dict[str, Any]) -> bool:
        """Fold one candidate record into the state; True when it is the new best."""
        kind = record.get("kind")
        if kind == "proposal_error":
            self.state.proposal_errors += 1
            return False
        if kind == "duplicate":
            self.state.duplicates += 1
            return False
        self.seen.setdefault(record["source_sha"], record)
        self.state.usage.candidates += 1
        self.state.eval_s += float(record.get("eval_s") or 0.0)
        if record.get("accepted"):
            self.state.accepted += 1
            if self.state.first_accepted_s is None:
                self.state.first_accepted_s = float(record.get("run_elapsed_s") or 0.0)
        ind = Individual(
            id=record["id"], generation=record["generation"], island=record["island"], source=record["source"],
            fitness=float(record.get("fitness") or 0.0), accepted=bool(record.get("accepted")),
            backend=record["backend"], strategy=record.get("strategy") or "default", operator=record["operator"],
            parent_ids=list(record.get("parent_ids") or []), feedback=render_feedback(record.get("verdict")),
            verdict=record.get("verdict"),
        )
        improved = self.population.add(ind)
        if improved:
            info = {k: record.get(k) for k in ("id", "generation", "operator", "parent_ids", "fitness", "model")}
            self.run_dir.write_best(ind.source, ind.verdict, info)
        return improved

    # -- progress --------------------------------------------------------------------------------
    def progress(self, event: str, gen: int, last: dict[str, Any] | None = None, stop: str | None = None) -> Progress:
        best = self.population.best
        vs_eager, vs_compile = speedups(best.verdict if best else None)
        usage = self.state.usage
        usage.elapsed_s = self.elapsed()
        return Progress(
            generation=gen, evaluated=usage.candidates, accepted=self.state.accepted,
            best_fitness=best.fitness if best else 0.0, best_speedup_vs_eager=vs_eager,
            best_speedup_vs_compile=vs_compile, tokens=usage.tokens, cost_usd=usage.cost_usd,
            elapsed_s=usage.elapsed_s, eta_s=eta_s(self.budget, usage), event=event,
            timed=is_timed(best.verdict if best else None), last=last, stop_reason=stop,
        )

    def _emit(self, *args: Any, **kwargs: Any) -> None:
        if self.on_progress is not None:
            self.on_progress(self.progress(*args, **kwargs))

    # -- the loop --------------------------------------------------------------------------------
    def run(self) -> str:
        """Search until a budget, a plateau or cancellation stops it; returns the stop reason."""
        pool = ThreadPoolExecutor(max_workers=max(1, self.config.proposal_workers), thread_name_prefix="propose")
        pending: deque[list[Slot]] = deque()
        next_gen, reason, slots = 0, None, []
        try:
            while reason is None:
                reason = self._stop()
                if reason is not None:
                    break
                if not pending:
                    planned = self._plan_generation(next_gen, pool)
                    if planned is None:  # nothing left to plan within the budget
                        reason = stop_reason(self.budget, self.state.usage) or "budget_candidates"
                        break
                    pending.append(planned)
                    next_gen += 1
                slots = pending.popleft()
                if self.config.lookahead:
                    planned = self._plan_generation(next_gen, pool)
                    if planned is not None:
                        pending.append(planned)
                        next_gen += 1
                reason = self._run_generation(slots)
        except BaseException:  # interrupted: do not wait for proposer calls in flight
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        # Replies already on their way get a short grace so that they are logged (and paid for) once;
        # a slow endpoint must not hold the run past its time budget or a cancellation.
        in_flight = [slot.future for gen in (slots, *pending) for slot in gen if slot.future is not None]
        pool.shutdown(wait=False, cancel_futures=True)
        wait_futures([f for f in in_flight if not f.cancelled()], timeout=REPLY_GRACE_S)
        self._emit("done", self.state.generations, stop=reason)
        return reason

    def _run_generation(self, slots: list[Slot]) -> str | None:
        gen = slots[0].generation
        best_before = self.population.best.fitness if self.population.best else 0.0
        new_candidates = 0

        def absorb(record: dict[str, Any]) -> None:
            nonlocal new_candidates
            self._absorb(record)
            new_candidates += record.get("kind") == "evaluated"
            last = {k: record.get(k) for k in ("id", "operator", "kind", "fitness", "accepted", "replayed")}
            last["reason"] = (record.get("verdict") or {}).get("reason")
            self._emit("candidate", gen, last=last)

        window = EvaluationWindow(self.evaluations_in_flight, absorb)
        try:
            reason = self._submit_generation(slots, window)
            window.drain()  # candidates in flight are judged and counted even when a budget stops the loop
        finally:
            window.close()
        if reason is not None:
            return reason
        self.state.generations = gen + 1
        usage = self.state.usage
        best_after = self.population.best.fitness if self.population.best else 0.0
        improved = best_after > best_before
        usage.generations_without_improvement = 0 if improved else usage.generations_without_improvement + 1
        usage.generations_without_candidates = 0 if new_candidates else usage.generations_without_candidates + 1
        if self.config.migration_interval and (gen + 1) % self.config.migration_interval == 0:
            self.population.migrate()
        self._emit("generation", gen + 1)
        return None

    def _submit_generation(self, slots: list[Slot], window: EvaluationWindow) -> str | None:
        """Hand every candidate of the generation to the window; returns why it stopped early, if it did."""
        for index, slot in enumerate(slots):
            reason = self._gate(window)
            if reason is not None:
                return reason
            reply = slot.reply()
            self.planned_pending -= 1
            self.state.slots_consumed += 1
            self._account_slot(reply)  # paid for: its candidates are judged even if that crosses a budget
            proposals = reply.get("proposals") or [{"error": reply.get("error") or "the proposer returned nothing"}]
            for k, proposal in enumerate(proposals):
                reason = self._gate(window, spend=False) if k else None
                if reason is not None:
                    return reason
                if window.size == 1:  # one at a time: load the next candidate while this one is judged
                    self._prefetch_next(proposals[k + 1:], slots[index + 1:])
                source = proposal.get("source") or ""
                key = source_sha(source) if source.strip() and not proposal.get("error") else None
                window.submit(lambda slot=slot, k=k, proposal=proposal: self._judge(slot, k, proposal), key=key)
        return None
