"""The job state machine's decisions, as pure functions of a record and facts read from Redis.

The store reads the facts (is the chunk's lease alive, who holds the (repo, op) lock) inside a
transaction, asks these functions what to do, and writes the answer; nothing here does I/O, so every
rule is tested without Redis.
"""

from __future__ import annotations

from typing import Any

from kernelevo.search.fitness import is_accepted, is_timed
from workflows.models import ChunkEnd, ClaimOutcome, JobRecord, JobState, ReapAction, WorkerIdentity


def decide_claim(record: JobRecord | None, epoch: int, worker: WorkerIdentity, *, lease_alive: bool,
                 lock_holder: str | None, holder_live: bool) -> ClaimOutcome:
    """Whether ``worker`` may run the chunk of ``epoch``.

    ``lease_alive``: the job's heartbeat key exists (some chunk process renewed it recently).
    ``lock_holder``: the job id in the (repo, op) lock; ``holder_live``: that job exists and is not
    terminal. A message of the current epoch is taken when no chunk holds the lease (a worker that
    died mid-chunk lets its message be redelivered and re-run) or when the lease is this very process's
    (a claim retried after a dropped connection)."""
    if record is None:
        return ClaimOutcome.MISSING
    if record.state.terminal:
        return ClaimOutcome.TERMINAL
    if epoch != record.epoch:
        return ClaimOutcome.STALE
    own = record.owner == worker.node and record.owner_pid == worker.pid
    if lease_alive and not own:
        return ClaimOutcome.BUSY
    if record.cancel_requested:
        return ClaimOutcome.CANCEL
    if record.spec.device != worker.device:
        return ClaimOutcome.WRONG_DEVICE
    if lock_holder not in (None, record.id) and holder_live:
        return ClaimOutcome.WAIT_LOCK
    return ClaimOutcome.RUN


def search_outcome(stop_reason: str, best: dict[str, Any] | None, device: str) -> JobState:
    """The terminal state of a finished search (``stop_reason`` other than a chunk's ``cancelled``).

    ``succeeded`` needs an improvement: on a GPU an accepted kernel faster than the best baseline
    (fitness > 1, the geomean speedup over the better of eager and torch.compile); on CPU, where nothing
    is timed, an accepted kernel."""
    if best is None or not is_accepted(best.get("verdict")):
        return JobState.NO_IMPROVEMENT
    if is_timed(best.get("verdict")):
        return JobState.SUCCEEDED if float(best.get("fitness") or 0.0) > 1.0 else JobState.NO_IMPROVEMENT
    return JobState.SUCCEEDED if device == "cpu" else JobState.NO_IMPROVEMENT


def chunk_end(stop_reason: str, *, cancel_requested: bool, fenced: bool) -> ChunkEnd:
    if fenced:
        return ChunkEnd.FENCED
    if stop_reason != "cancelled":
        return ChunkEnd.FINISHED
    return ChunkEnd.CANCELLED if cancel_requested else ChunkEnd.CONTINUE


def chunk_should_stop(*, now: float, deadline: float, new_candidates: int, cancel_requested: bool,
                      fenced: bool) -> bool:
    """The chunk's ``should_cancel``: a user cancel or a lost claim at once; the deadline only once the
    chunk has judged at least one new candidate, so that every chunk makes progress."""
    return cancel_requested or fenced or (now >= deadline and new_candidates > 0)


def reap_action(record: JobRecord | None, *, lease_alive: bool, dispatching: bool,
                max_recoveries: int) -> ReapAction:
    """What the reaper does with one job listed as active."""
    if record is None or record.state.terminal:
        return ReapAction.FORGET
    if record.owner is not None:
        if lease_alive:
            return ReapAction.NONE
        if record.cancel_requested:
            return ReapAction.CANCEL
        if record.recoveries >= max_recoveries:
            return ReapAction.FAIL
        return ReapAction.RECOVER
    if record.dispatch_pending and not dispatching:
        return ReapAction.REDISPATCH
    return ReapAction.NONE
