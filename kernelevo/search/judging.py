"""Judging one candidate and folding its record into the loop's state (a part of :class:`SearchLoop`).

``_judge`` runs on an evaluation thread (several may run at once); ``_absorb`` runs in submission
order on the loop's thread, so the population and counters never depend on which judge finished first.
"""

from __future__ import annotations

from typing import Any

from evaluator.verdict import NeedsGPU, Verdict
from kernelevo.search.feedback import render_feedback
from kernelevo.search.fitness import fitness_of
from kernelevo.search.loop_core import LoopCore
from kernelevo.search.population import Individual
from kernelevo.search.slots import Slot, candidate_record, source_sha

EVALUATED_BACKENDS = ("triton", "cuda", "load_inline")


def record_verdict(record: dict[str, Any]) -> Verdict | None:
    """The verdict of a candidate record (the run directory keeps it as JSON): the one place it is validated."""
    return Verdict.coerce(record.get("verdict"))


class Judging(LoopCore):
    """Candidate judging and absorbing, mixed into :class:`~kernelevo.search.engine.SearchLoop`."""

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
                judged = self.evaluator.evaluate_source(source, name=f"{self.slug}-{cid}")
            except NeedsGPU as exc:  # e.g. a CUDA candidate in a CPU run: recorded, not fatal to the search
                record.update(kind="proposal_error", verdict=None, fitness=0.0, accepted=False, detail=str(exc))
                record["run_elapsed_s"] = self.elapsed()
                self.run_dir.append_candidate(record)
                return record
            verdict = Verdict.coerce(judged)
            if verdict is None:
                raise TypeError(f"{type(self.evaluator).__name__}.evaluate_source returned no verdict for {cid}")
            eval_s = self.clock() - t0
            if verdict.backend in EVALUATED_BACKENDS:  # what the evaluator saw wins
                record["backend"] = verdict.backend
                record["cell"] = [record["backend"], record["strategy"] or "default"]
            record.update(kind="evaluated", verdict=verdict.to_dict(), fitness=fitness_of(verdict),
                          accepted=verdict.accepted, t_eval_start=w0, t_eval_end=self.wall(), eval_s=eval_s)
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

    def _absorb(self, record: dict[str, Any], verdict: Verdict | None) -> bool:
        """Fold one candidate record (and its verdict, validated from it) into the state; True when it is the
        new best."""
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
            parent_ids=list(record.get("parent_ids") or []), feedback=render_feedback(verdict), verdict=verdict,
        )
        improved = self.population.add(ind)
        if improved:
            info = {k: record.get(k) for k in ("id", "generation", "operator", "parent_ids", "fitness", "model")}
            self.run_dir.write_best(ind.source, verdict.to_dict() if verdict else None, info)
        return improved
