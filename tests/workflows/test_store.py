"""The job store against a real redis-server: atomic transitions, idempotency, locks, leases, cancel, reaper."""

import threading

import pytest
from workflow_harness import build_spec

from workflows.models import (
    CancelOutcome,
    ClaimOutcome,
    JobEventKind,
    JobLinks,
    JobProgress,
    JobState,
    ReapAction,
    WorkerIdentity,
)
from workflows.store import BlobError, Fenced

W1 = WorkerIdentity(node="w1@test", pid=101, device="cpu")
W2 = WorkerIdentity(node="w2@test", pid=202, device="cpu")


def queued_messages(jobs, queue="cpu"):
    return jobs.store.client.llen(queue)


def test_submit_queues_one_message_and_a_duplicate_returns_the_same_job(jobs, repo):
    spec = build_spec(jobs, repo)
    first = jobs.submit(spec)
    assert first.created and first.record.state is JobState.QUEUED and first.record.epoch == 1
    assert queued_messages(jobs) == 1
    assert not jobs.get(first.record.id).dispatch_pending  # the message was sent and confirmed
    again = jobs.submit(spec)
    assert not again.created and again.record.id == first.record.id and queued_messages(jobs) == 1
    other_pr = jobs.submit(spec.model_copy(update={"commit_sha": "f" * 40}))
    assert other_pr.created and other_pr.record.id != first.record.id


def test_a_failed_job_can_be_submitted_again(jobs, repo):
    spec = build_spec(jobs, repo)
    job = jobs.submit(spec).record
    jobs.store.claim(job.id, 1, W1)
    jobs.store.finish(job.id, 1, W1, JobState.FAILED, error="boom")
    retry = jobs.submit(spec)
    assert retry.created and retry.record.id != job.id


def test_blobs_are_content_addressed_capped_and_checked(jobs, repo):
    spec = build_spec(jobs, repo)
    assert jobs.upload_repo(jobs.store.get_blob(spec.source)) == spec.source  # same bytes, same key
    with pytest.raises(BlobError, match="cap"):
        jobs.store.put_blob(b"x" * (jobs.store.limits.blob_max_bytes + 1))
    jobs.store.client.set(spec.source.blob_key, b"tampered")
    with pytest.raises(BlobError, match="does not match its SHA-256"):
        jobs.store.get_blob(spec.source)
    jobs.store.client.delete(spec.source.blob_key)
    with pytest.raises(BlobError, match="no longer in Redis"):
        jobs.store.get_blob(spec.source)
    with pytest.raises(BlobError, match="not in Redis"):
        jobs.submit(spec.model_copy(update={"commit_sha": "e" * 40}))


def test_claims_take_the_lease_and_the_op_lock(jobs, repo):
    a = jobs.submit(build_spec(jobs, repo, commit="a" * 40)).record
    b = jobs.submit(build_spec(jobs, repo, commit="b" * 40)).record  # the same (repo, op)
    won = jobs.store.claim(a.id, 1, W1)
    assert won.outcome is ClaimOutcome.RUN and won.record.owner == W1.node and won.record.chunks == 1
    assert jobs.store.lease_alive(a.id)
    assert jobs.store.claim(a.id, 1, W2).outcome is ClaimOutcome.BUSY  # a duplicate delivery
    assert jobs.store.claim(a.id, 0, W2).outcome is ClaimOutcome.STALE
    waiting = jobs.store.claim(b.id, 1, W2)
    assert waiting.outcome is ClaimOutcome.WAIT_LOCK and waiting.record.epoch == 2
    assert waiting.record.waiting_for == a.id and waiting.record.state is JobState.QUEUED
    jobs.store.finish(a.id, 1, W1, JobState.NO_IMPROVEMENT)
    assert jobs.store.claim(b.id, 2, W2).outcome is ClaimOutcome.RUN  # the lock went with a's end
    assert jobs.store.claim(a.id, 1, W2).outcome is ClaimOutcome.TERMINAL


def test_a_worker_of_another_device_re_queues_the_job(jobs, repo):
    job = jobs.submit(build_spec(jobs, repo)).record
    gpu = WorkerIdentity(node="gpu0@test", pid=1, device="cuda")
    claim = jobs.store.claim(job.id, 1, gpu)
    assert claim.outcome is ClaimOutcome.WRONG_DEVICE and claim.record.epoch == 2
    assert claim.record.events[-1].kind is JobEventKind.WRONG_DEVICE


def test_a_chunk_that_lost_its_job_is_fenced(jobs, repo):
    job = jobs.submit(build_spec(jobs, repo)).record
    jobs.store.claim(job.id, 1, W1)
    assert not jobs.store.heartbeat(job.id, 1, W1, JobProgress(evaluated=3)).fenced
    assert jobs.get(job.id).progress.evaluated == 3
    jobs.store.client.delete(jobs.store.keys.heartbeat(job.id))  # the lease lapsed (a long pause)
    [reaped] = jobs.reap()
    assert reaped.action is ReapAction.RECOVER and reaped.record.epoch == 2 and reaped.record.recoveries == 1
    assert jobs.store.heartbeat(job.id, 1, W1).fenced
    with pytest.raises(Fenced):
        jobs.store.end_chunk(job.id, 1, W1)
    with pytest.raises(Fenced):
        jobs.store.finish(job.id, 1, W1, JobState.SUCCEEDED)
    assert jobs.store.claim(job.id, 2, W2).outcome is ClaimOutcome.RUN


def test_chunk_end_moves_to_the_next_epoch(jobs, repo):
    job = jobs.submit(build_spec(jobs, repo)).record
    jobs.store.claim(job.id, 1, W1)
    record = jobs.store.end_chunk(job.id, 1, W1, "deadline")
    assert record.epoch == 2 and record.owner is None and record.state is JobState.RUNNING
    assert record.dispatch_pending and not jobs.store.lease_alive(job.id)
    assert [r.action for r in jobs.reap()] == []  # being dispatched: the reaper leaves it alone
    jobs.store.client.delete(jobs.store.keys.dispatching(job.id))  # ... until the sender's lease lapses
    [again] = jobs.reap()
    assert again.action is ReapAction.REDISPATCH and again.record.epoch == 3 and not jobs.get(job.id).dispatch_pending


def test_cancel_is_immediate_when_queued_and_by_flag_when_running(jobs, repo):
    queued = jobs.submit(build_spec(jobs, repo, commit="1" * 40)).record
    outcome, record = jobs.cancel(queued.id)
    assert outcome is CancelOutcome.CANCELLED and record.state is JobState.CANCELLED
    assert jobs.store.claim(queued.id, 1, W1).outcome is ClaimOutcome.TERMINAL  # its message is dropped unrun
    assert jobs.cancel(queued.id)[0] is CancelOutcome.FINISHED

    running = jobs.submit(build_spec(jobs, repo, commit="2" * 40)).record
    jobs.store.claim(running.id, 1, W1)
    assert jobs.cancel(running.id)[0] is CancelOutcome.REQUESTED
    assert jobs.store.heartbeat(running.id, 1, W1).cancel_requested
    jobs.store.client.delete(jobs.store.keys.heartbeat(running.id))  # its worker died before it stopped
    [reaped] = jobs.reap()
    assert reaped.action is ReapAction.CANCEL and jobs.get(running.id).state is JobState.CANCELLED


def test_a_job_whose_workers_keep_dying_fails_with_a_reason(jobs, repo):
    job = jobs.submit(build_spec(jobs, repo)).record
    epoch = 1
    for _ in range(jobs.store.limits.max_recoveries + 1):
        jobs.store.claim(job.id, epoch, W1)
        jobs.store.client.delete(jobs.store.keys.heartbeat(job.id))
        [reaped] = jobs.reap()
        epoch = reaped.record.epoch
    assert reaped.action is ReapAction.FAIL
    record = jobs.get(job.id)
    assert record.state is JobState.FAILED and "died 6 times" in record.error and "worker's log" in record.error


def test_concurrent_updates_are_never_lost(jobs, repo):
    job = jobs.submit(build_spec(jobs, repo)).record
    jobs.store.claim(job.id, 1, W1)

    def bump(record):
        record.links = JobLinks(check_run_id=(record.links.check_run_id or 0) + 1)
        return record

    def writer():
        for _ in range(25):
            jobs.update(job.id, bump)

    def beater():
        for i in range(25):
            jobs.store.heartbeat(job.id, 1, W1, JobProgress(evaluated=i))

    threads = [threading.Thread(target=writer) for _ in range(6)] + [threading.Thread(target=beater)]
    for t in threads:
        t.start()
    jobs.cancel(job.id)
    for t in threads:
        t.join()
    record = jobs.get(job.id)
    assert record.links.check_run_id == 150 and record.cancel_requested and record.progress.evaluated == 24


def test_a_pull_requests_jobs_are_found_oldest_first(jobs, repo):
    a = jobs.submit(build_spec(jobs, repo, commit="a" * 40, pr=7)).record
    b = jobs.submit(build_spec(jobs, repo, commit="b" * 40, pr=7)).record
    jobs.submit(build_spec(jobs, repo, commit="c" * 40, pr=8))
    jobs.submit(build_spec(jobs, repo, commit="d" * 40))
    assert [r.id for r in jobs.find("local/test", 7)] == [a.id, b.id]
    assert jobs.find("local/test", 9) == [] and jobs.find("other/repo", 7) == []


def test_listing_filters_by_state_newest_first(jobs, repo):
    a = jobs.submit(build_spec(jobs, repo, commit="a" * 40)).record
    b = jobs.submit(build_spec(jobs, repo, commit="b" * 40)).record
    jobs.cancel(a.id)
    assert [r.id for r in jobs.list()] == [b.id, a.id]
    assert [r.id for r in jobs.list([JobState.CANCELLED])] == [a.id]
