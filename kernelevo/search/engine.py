"""The evolutionary loop: plan slots, gather proposals in a thread pool, judge candidates in order.

Determinism: the loop draws every random choice from one ``random.Random(seed)`` and consumes
proposals in slot order, whatever order the proposer threads finish in; the next generation is
planned (and its proposals requested) while the current one is being evaluated, from the state
that is complete at that point. With several evaluations in flight, a generation's candidates start
while the previous generation's last results come in (no slot idles at the boundary), but their
results are absorbed only after that generation is closed and the next one planned from it
(``EvaluationWindow.fence``): the run is the one-at-a-time run, faster. Durability: proposer replies
and verdicts go to the run directory as they happen; on resume the same plan is replayed and
slots/candidates already on disk are reused instead of asking the proposer or the evaluator again.
"""

from __future__ import annotations

import random
import re
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import replace
from functools import partial
from typing import Any

from kernelevo.search.budget import Budget, eta_s, stop_reason
from kernelevo.search.config import Evaluator, SearchConfig
from kernelevo.search.fitness import is_timed, speedups
from kernelevo.search.judging import Judging, record_verdict
from kernelevo.search.loop_state import Consumption, LoopState, Tally
from kernelevo.search.planning import Planning
from kernelevo.search.population import Population
from kernelevo.search.pricing import Price
from kernelevo.search.proposer import Proposer, abort_calls
from kernelevo.search.result import Progress, rejection_counts
from kernelevo.search.rundir import RunDir
from kernelevo.search.slots import Slot, source_sha
from kernelevo.search.window import EvaluationWindow

REPLY_GRACE_S = 10.0  # how long a stopping run waits for proposer replies already in flight


class SearchLoop(Planning, Judging):
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
        self.seen = {}  # source sha -> first candidate record
        self.logged_slots = {r["slot"]: r for r in run.proposals()}
        self.logged_candidates = {r["id"]: r for r in run.candidates()}
        records = [*self.logged_slots.values(), *self.logged_candidates.values()]
        self.prior_elapsed = max((float(r.get("run_elapsed_s") or 0) for r in records), default=0.0)
        self.session_start = clock()
        self.planned_pending = 0  # slots planned whose replies have not been consumed yet
        # Generations: planned and not yet started (``pending``), open (results being absorbed, not closed),
        # waiting (candidates running, results held behind the window's fence until ``open`` closes).
        self.pending: deque[list[Slot]] = deque()
        self.next_gen = 0
        self.open: Tally | None = None
        self.waiting: Tally | None = None
        self.stopped_closing = False  # closing a generation stopped the run: the waiting one is not counted
        self.pool: ThreadPoolExecutor | None = None  # proposer threads, while run() runs
        self.submitting: list[Slot] = []  # the generation whose candidates are being handed to the window

    # -- stopping --------------------------------------------------------------------------------
    def _stop(self, spend: bool = True, in_flight: int = 0, consumed: Consumption | None = None) -> str | None:
        """Why to stop now; ``spend=False`` ignores tokens and money (already paid for the reply at hand);
        ``in_flight`` candidates being judged count as evaluated; ``consumed``: judge spend as it stood
        then (a generation closing late must not see the next one's replies)."""
        self.state.usage.elapsed_s = self.elapsed()
        budget = self.budget if spend else replace(self.budget, tokens=None, usd=None)
        usage = replace(self.state.usage, candidates=self.state.usage.candidates + in_flight)
        if consumed is not None:
            usage = replace(usage, tokens=consumed.tokens, cost_usd=consumed.cost_usd)
        return stop_reason(budget, usage, cancelled=bool(self.should_cancel()))

    def _gate(self, window: EvaluationWindow, spend: bool = True) -> str | None:
        """The stop reason before submitting another candidate. When only the candidates in flight would
        reach a budget, the open generation is closed and they are absorbed first, and the budget is
        checked on what they really counted."""
        reason = self._stop(spend)
        if reason is None and window.pending and self._stop(spend, in_flight=window.pending):
            reason = self._settle(window, block=True)
            if reason is not None:
                return reason
            window.drain()
            reason = self._stop(spend)
        return reason

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

    def rejections(self) -> dict[str, int]:
        """The run's rejected candidates by reason (``SearchResult.rejections``), counted from its archive: every
        session's candidates, and the same figures a report counts when it reads the archive itself."""
        return rejection_counts(self.run_dir.candidates())

    def _emit(self, *args: Any, **kwargs: Any) -> None:
        if self.on_progress is not None:
            self.on_progress(self.progress(*args, **kwargs))

    # -- the loop --------------------------------------------------------------------------------
    def run(self) -> str:
        """Search until a budget, a plateau or cancellation stops it; returns the stop reason."""
        self.pool = ThreadPoolExecutor(max_workers=max(1, self.config.proposal_workers), thread_name_prefix="propose")
        window = EvaluationWindow(self.evaluations_in_flight, self._absorb_in_order)
        reason: str | None = None
        try:
            while reason is None:
                reason = self._stop()
                if reason is not None:
                    break
                while not self.pending and self.open is not None and self.open.complete and reason is None:
                    reason = self._settle(window, block=True)  # planning needs every earlier generation closed
                if reason is not None:
                    break
                if not self.pending:
                    planned = self._plan_generation(self.next_gen, self.pool, self._consumption())
                    if planned is None:  # nothing left to plan within the budget
                        reason = stop_reason(self.budget, self.state.usage) or "budget_candidates"
                        break
                    self.pending.append(planned)
                    self.next_gen += 1
                reason = self._run_generation(self.pending.popleft(), window)
            reason = self._finish(window, reason)
        except BaseException:  # interrupted: do not wait for proposer calls in flight
            self.pool.shutdown(wait=False, cancel_futures=True)
            abort_calls(self.proposer)
            window.discard()
            raise
        finally:
            window.close()
        # Replies already on their way get a short grace so that they are logged (and paid for) once;
        # a slow endpoint must not hold the run past its time budget or a cancellation.
        in_flight = [slot.future for gen in (self.submitting, *self.pending) for slot in gen if slot.future is not None]
        self.pool.shutdown(wait=False, cancel_futures=True)
        wait_futures([f for f in in_flight if not f.cancelled()], timeout=REPLY_GRACE_S)
        self._emit("done", self.state.generations, stop=reason)
        return reason

    def _run_generation(self, slots: list[Slot], window: EvaluationWindow) -> str | None:
        """Submit a generation's candidates. Its results are absorbed once the generation before it is
        closed (until then they run, and wait behind the window's fence)."""
        self.submitting = slots
        tally = Tally(slots[0].generation, consumed=self._consumption())
        if self.open is None:
            self._open(tally, window)
        else:
            self.waiting = tally
        reason = self._submit_generation(slots, window)
        tally.complete = reason is None
        return reason

    def _open(self, tally: Tally, window: EvaluationWindow, plan: bool = True) -> None:
        """Let ``tally``'s generation be absorbed, and plan the one after it from the state so far."""
        window.fence, self.open = tally.gen, tally
        tally.best_before = self.population.best.fitness if self.population.best else 0.0
        if plan and self.config.lookahead:
            if self.pool is None:
                raise RuntimeError("SearchLoop._open: no proposer pool (generations are opened only inside run())")
            planned = self._plan_generation(self.next_gen, self.pool, tally.consumed)
            if planned is not None:
                self.pending.append(planned)
                self.next_gen += 1

    def _settle(self, window: EvaluationWindow, block: bool, plan: bool = True) -> str | None:
        """Close the open generation once it is fully submitted and all its results are in (``block``: wait
        for them), then open the waiting one. Returns the stop reason closing it leads to (a plateau), if any."""
        if self.open is None or not self.open.complete or not (block or window.absorbed_through(self.open.gen)):
            return None
        window.drain()
        self._close_generation(self.open)
        self.open = None
        reason = self._stop(consumed=self.waiting.consumed if self.waiting is not None else None)
        if reason is not None:
            self.stopped_closing = True
            return reason
        if self.waiting is not None:
            waiting, self.waiting = self.waiting, None
            self._open(waiting, window, plan=plan)
        return None

    def _close_generation(self, tally: Tally) -> None:
        self.state.generations = tally.gen + 1
        usage = self.state.usage
        best_after = self.population.best.fitness if self.population.best else 0.0
        improved = best_after > tally.best_before
        usage.generations_without_improvement = 0 if improved else usage.generations_without_improvement + 1
        usage.generations_without_candidates = (
            0 if tally.new_candidates else usage.generations_without_candidates + 1)
        if self.config.migration_interval and (tally.gen + 1) % self.config.migration_interval == 0:
            self.population.migrate()
        self._emit("generation", tally.gen + 1)

    def _finish(self, window: EvaluationWindow, reason: str) -> str:
        """After a stop: close the open generation as the one-at-a-time loop would have, then absorb the
        candidates in flight (they are judged and counted even when a budget stopped the loop), unless
        closing a generation stopped the run: candidates of the next one are then not counted (they are in
        the archive, where a resumed run finds them)."""
        if not self.stopped_closing:
            reason = self._settle(window, block=True, plan=False) or reason
        if self.stopped_closing:
            window.discard()
        else:
            window.drain()
        return reason

    def _absorb_in_order(self, record: dict[str, Any]) -> None:
        tally = self.open  # the fence lets only the open generation's results through
        assert tally is not None and tally.gen == record["generation"], (record["id"], tally)
        verdict = record_verdict(record)
        self._absorb(record, verdict)
        tally.new_candidates += record.get("kind") == "evaluated"
        last = {k: record.get(k) for k in ("id", "operator", "kind", "fitness", "accepted", "replayed")}
        last["reason"] = verdict.reason.value if verdict else None
        self._emit("candidate", tally.gen, last=last)

    def _submit_generation(self, slots: list[Slot], window: EvaluationWindow) -> str | None:
        """Hand every candidate of the generation to the window; returns why it stopped early, if it did."""
        for index, slot in enumerate(slots):
            reason = self._settle(window, block=False) or self._gate(window)
            if reason is not None:
                return reason
            reply = slot.reply()
            self.planned_pending -= 1
            self.state.slots_consumed += 1
            self._account_slot(reply)  # paid for: its candidates are judged even if that crosses a budget
            proposals = reply.get("proposals") or [{"error": reply.get("error") or "the proposer returned nothing"}]
            for k, proposal in enumerate(proposals):
                reason = (self._settle(window, block=False) or self._gate(window, spend=False)) if k else None
                if reason is not None:
                    return reason
                if window.size == 1:  # one at a time: load the next candidate while this one is judged
                    self._prefetch_next(proposals[k + 1:], slots[index + 1:])
                source = proposal.get("source") or ""
                key = source_sha(source) if source.strip() and not proposal.get("error") else None
                window.submit(partial(self._judge, slot, k, proposal), key=key, tag=slot.generation)
        return None
