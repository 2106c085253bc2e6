"""The state machine's decisions (pure): who may run a chunk, what a search's end means, what the reaper does."""

import pytest

from workflows.lifecycle import chunk_end, chunk_should_stop, decide_claim, reap_action, search_outcome
from workflows.models import (
    ChunkEnd,
    ClaimOutcome,
    JobRecord,
    JobSpec,
    JobState,
    Origin,
    OriginKind,
    ReapAction,
    RepoSource,
    WorkerIdentity,
)

SOURCE = RepoSource(blob_key="kernelevo:blob:" + "a" * 64, sha256="a" * 64, size_bytes=1)
ME = WorkerIdentity(node="w1@h", pid=10, device="cpu")


def record(**changes) -> JobRecord:
    spec = JobSpec(repo="o/r", commit_sha="c" * 40, op_id="ops.py::f", source=SOURCE, device="cpu",
                   origin=Origin(kind=OriginKind.CLI))
    return JobRecord(id="job-000000000001", spec=spec, epoch=3).model_copy(update=changes)


def claim(rec, epoch=3, worker=ME, lease=False, holder=None, holder_live=True):
    return decide_claim(rec, epoch, worker, lease_alive=lease, lock_holder=holder, holder_live=holder_live)


def test_a_current_message_with_no_live_chunk_runs():
    assert claim(record()) is ClaimOutcome.RUN
    assert claim(record(state=JobState.RUNNING, owner="dead@h", owner_pid=9)) is ClaimOutcome.RUN  # lease lapsed


@pytest.mark.parametrize(("rec", "kwargs", "outcome"), [
    (None, {}, ClaimOutcome.MISSING),
    (record(state=JobState.CANCELLED), {}, ClaimOutcome.TERMINAL),
    (record(state=JobState.SUCCEEDED), {"epoch": 2}, ClaimOutcome.TERMINAL),
    (record(), {"epoch": 2}, ClaimOutcome.STALE),  # re-queued since: the old message is dropped
    (record(), {"epoch": 4}, ClaimOutcome.STALE),
    (record(owner="w2@h", owner_pid=5), {"lease": True}, ClaimOutcome.BUSY),  # a duplicate delivery
    (record(cancel_requested=True, owner="dead@h", owner_pid=1), {}, ClaimOutcome.CANCEL),
    (record(), {"worker": WorkerIdentity(node="g@h", pid=1, device="cuda")}, ClaimOutcome.WRONG_DEVICE),
    (record(), {"holder": "job-000000000002"}, ClaimOutcome.WAIT_LOCK),
])
def test_claim_decisions(rec, kwargs, outcome):
    assert claim(rec, **kwargs) is outcome


def test_own_lease_and_stale_locks_do_not_block():
    mine = record(state=JobState.RUNNING, owner=ME.node, owner_pid=ME.pid)
    assert claim(mine, lease=True) is ClaimOutcome.RUN  # a claim retried after a dropped connection
    assert claim(record(), holder="job-000000000001") is ClaimOutcome.RUN  # its own lock
    assert claim(record(), holder="job-000000000002", holder_live=False) is ClaimOutcome.RUN  # holder finished


def verdict(timed_speedup=None, accepted=True):
    from evaluator.verdict import Timing, Verdict

    timing = Timing(geomean_speedup_vs_best=timed_speedup) if timed_speedup is not None else None
    return Verdict(verdict="accepted" if accepted else "rejected", reason="ok" if accepted else "incorrect",
                   timing=timing).to_dict()


@pytest.mark.parametrize(("best", "device", "state"), [
    (None, "cpu", JobState.NO_IMPROVEMENT),
    ({"verdict": verdict(), "fitness": 1.0}, "cpu", JobState.SUCCEEDED),  # CPU: accepted is the bar
    ({"verdict": verdict(accepted=False), "fitness": 0.0}, "cpu", JobState.NO_IMPROVEMENT),
    ({"verdict": verdict(1.4), "fitness": 1.4}, "cuda", JobState.SUCCEEDED),  # faster than the best baseline
    ({"verdict": verdict(0.9), "fitness": 0.9}, "cuda", JobState.NO_IMPROVEMENT),
    ({"verdict": verdict(1.0), "fitness": 1.0}, "cuda", JobState.NO_IMPROVEMENT),  # as fast is no improvement
    ({"verdict": verdict(), "fitness": 1.0}, "cuda", JobState.NO_IMPROVEMENT),  # a GPU run that timed nothing
])
def test_search_outcome(best, device, state):
    assert search_outcome("budget_candidates", best, device) is state


def test_chunk_end_tells_a_user_cancel_from_the_deadline():
    assert chunk_end("cancelled", cancel_requested=False, fenced=False) is ChunkEnd.CONTINUE
    assert chunk_end("cancelled", cancel_requested=True, fenced=False) is ChunkEnd.CANCELLED
    assert chunk_end("plateau", cancel_requested=False, fenced=False) is ChunkEnd.FINISHED
    assert chunk_end("plateau", cancel_requested=True, fenced=True) is ChunkEnd.FENCED


def test_a_chunk_stops_at_its_deadline_only_after_progress():
    stop = dict(now=10.0, deadline=5.0, cancel_requested=False, fenced=False)
    assert not chunk_should_stop(new_candidates=0, **stop)  # every chunk judges at least one new candidate
    assert chunk_should_stop(new_candidates=1, **stop)
    assert not chunk_should_stop(**{**stop, "now": 1.0}, new_candidates=5)
    assert chunk_should_stop(**{**stop, "now": 1.0, "cancel_requested": True}, new_candidates=0)
    assert chunk_should_stop(**{**stop, "now": 1.0, "fenced": True}, new_candidates=0)


@pytest.mark.parametrize(("rec", "lease", "dispatching", "action"), [
    (None, False, False, ReapAction.FORGET),
    (record(state=JobState.FAILED), False, False, ReapAction.FORGET),
    (record(state=JobState.RUNNING, owner="w@h", owner_pid=1), True, False, ReapAction.NONE),
    (record(state=JobState.RUNNING, owner="w@h", owner_pid=1), False, False, ReapAction.RECOVER),
    (record(state=JobState.RUNNING, owner="w@h", owner_pid=1, cancel_requested=True), False, False, ReapAction.CANCEL),
    (record(state=JobState.RUNNING, owner="w@h", owner_pid=1, recoveries=2), False, False, ReapAction.FAIL),
    (record(dispatch_pending=True), False, True, ReapAction.NONE),  # being sent right now
    (record(dispatch_pending=True), False, False, ReapAction.REDISPATCH),  # the sender died before confirming
    (record(), False, False, ReapAction.NONE),  # queued, its message in the queue
])
def test_reap_actions(rec, lease, dispatching, action):
    assert reap_action(rec, lease_alive=lease, dispatching=dispatching, max_recoveries=2) is action
