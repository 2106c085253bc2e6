"""Planning a generation's slots and asking the proposer for them (a part of :class:`SearchLoop`).

Every choice is drawn from the loop's one ``random.Random(seed)``, and the room a generation gets
depends only on absorbed results and on replies consumed at the point the one-at-a-time loop would
plan, so a replayed or parallel run plans the same slots.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kernelevo.search.loop_core import LoopCore
from kernelevo.search.loop_state import Consumption
from kernelevo.search.population import Individual
from kernelevo.search.proposer import Parent, ProposalRequest, operators_of
from kernelevo.search.slots import Slot, reply_record


class Planning(LoopCore):
    """Slot planning and proposer calls, mixed into :class:`~kernelevo.search.engine.SearchLoop`."""

    def _slot_backend(self, island: int) -> str:
        if self.backend == "any":
            return ("triton", "cuda")[island % 2]
        return self.backend

    def _parent(self, ind: Individual) -> Parent:
        # A parent crosses into proposers (some in their own sandboxed process): its verdict goes as JSON.
        verdict = ind.verdict.to_dict() if ind.verdict is not None else None
        return Parent(ind.source, ind.fitness, ind.feedback, verdict, ind.strategy, ind.backend)

    def _consumption(self) -> Consumption:
        """What planning may depend on besides absorbed results: replies consumed so far and their spend."""
        return Consumption(self.planned_pending, self.state.slots_consumed, self.state.usage.tokens,
                           self.state.usage.cost_usd)

    def _room(self, consumed: Consumption) -> int:
        """How many slots the next generation may have without planning past a budget.

        Uses absorbed candidates and the replies consumed at ``consumed`` (taken where the sequential loop
        would plan, so replay and any number of evaluations in flight plan the same); spend per slot is
        the average so far. Before any reply is in, one generation is requested and nothing ahead of it.
        """
        size, pending = self.config.generation_size, consumed.planned_pending
        if self.budget.candidates is not None:
            size = min(size, self.budget.candidates - self.state.usage.candidates - pending)
        for limit, used in ((self.budget.tokens, consumed.tokens), (self.budget.usd, consumed.cost_usd)):
            if limit is None:
                continue
            if not consumed.slots:
                size = 0 if pending else size
                continue
            per_slot = used / consumed.slots
            if per_slot > 0:
                size = min(size, max(int((limit - used) / per_slot) - pending, 0 if pending else 1))
        return size

    def _plan_generation(self, gen: int, pool: ThreadPoolExecutor, consumed: Consumption) -> list[Slot] | None:
        size = self._room(consumed)
        if size <= 0:
            return None
        slots: list[Slot] = []
        for index in range(size):
            island = index % self.config.islands
            plan = self.population.plan_slot(island, self.rng, operators_of(self.proposer))
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
