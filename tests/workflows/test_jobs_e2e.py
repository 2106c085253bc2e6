"""Jobs on real CPU workers (`kernelevo worker --device cpu`) and a real redis-server: chunks, duplicates,
the (repo, op) lock and cancellation. The search is real too: the offline proposer and the verifier, with
Triton's interpreter standing in for a GPU."""

from __future__ import annotations

import json

import pytest
from workflow_harness import RedisServer, Worker, build_spec, make_repo, settings_for, wait_for

from workflows.client import JobsClient
from workflows.models import CancelOutcome, JobEventKind, JobState

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, worker_cache):
    """One Redis and two CPU workers, shared by this module's tests (each test uses its own jobs)."""
    base = tmp_path_factory.mktemp("cluster")
    server = RedisServer(base / "redis").start()
    workers = []
    try:
        workers = [Worker(f"e2e{i}", server.url, base, cache=worker_cache).start() for i in (1, 2)]
        yield server, workers, JobsClient.from_settings(settings_for(server.url)), make_repo(base / "repo")
    finally:
        for worker in workers:
            worker.stop()
        server.stop()


def terminal(jobs, job_id):
    record = jobs.get(job_id)
    return record if record is not None and record.state.terminal else None


def archive(jobs, job_id):
    raw = jobs.store.client.lrange(jobs.store.keys.run_lines(job_id, "archive.jsonl"), 0, -1)
    return [json.loads(line) for line in raw]


def bot_messages(jobs):
    """(task name, job id) of every message waiting on the bot queue (kombu's JSON envelope in a Redis list)."""
    messages = [json.loads(raw) for raw in jobs.store.client.lrange("bot", 0, -1)]
    return [(m["headers"]["task"], m["headers"]["argsrepr"].strip("()[]',\" ")) for m in messages]


def test_a_job_runs_to_completion_across_several_chunks(cluster, tmp_path):
    _, workers, jobs, repo = cluster
    job = jobs.submit(build_spec(jobs, repo, candidates=4, seed=1, pr=7)).record  # as the bot would submit it
    done = wait_for(lambda: terminal(jobs, job.id), "the job to finish", timeout=400)
    assert done.state is JobState.SUCCEEDED, done.error
    assert done.chunks >= 2 and done.epoch >= 2
    assert done.result.stop_reason == "budget_candidates" and "def " in done.result.best_source
    assert done.result.verdict["verdict"] == "accepted" and done.result.summary["candidates_evaluated"] == 4
    assert done.progress.evaluated == 4 and done.owner is None and not jobs.store.lease_alive(job.id)
    ids = [r["id"] for r in archive(jobs, job.id)]
    assert len(ids) == len(set(ids))  # resumed chunk after chunk: nothing judged twice
    kinds = [e.kind for e in done.events]
    assert kinds.count(JobEventKind.CHUNK_STARTED) == done.chunks and kinds[-1] is JobEventKind.FINISHED
    assert {e.owner for e in done.events if e.kind is JobEventKind.CHUNK_STARTED} <= {w.node for w in workers}

    run_dir = jobs.restore_run(job.id, tmp_path / "run")  # the run directory, for the bot's report
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["candidates_evaluated"] == 4 and len(summary["stop_reasons"]) == done.chunks
    assert (run_dir / "best" / "kernel.py").read_text() == done.result.best_source
    told = bot_messages(jobs)  # the bot's contract: one publish at the end, progress at each chunk
    assert told.count(("kernelevo.bot.publish", job.id)) == 1
    assert told.count(("kernelevo.bot.report_progress", job.id)) == done.chunks


def test_a_duplicate_returns_the_job_and_a_second_search_of_the_op_waits_for_the_lock(cluster):
    _, _, jobs, repo = cluster
    first_spec = build_spec(jobs, repo, candidates=2, commit="1" * 40)
    first = jobs.submit(first_spec)
    assert jobs.submit(first_spec).record.id == first.record.id  # same repo, PR, op and commit
    wait_for(lambda: jobs.get(first.record.id).owner, "the first job to start")
    second = jobs.submit(build_spec(jobs, repo, candidates=2, commit="2" * 40)).record  # same (repo, op)
    assert second.id != first.record.id

    waited = wait_for(lambda: (r := jobs.get(second.id)).waiting_for and r, "the second job to wait for the lock")
    assert waited.waiting_for == first.record.id and waited.chunks == 0  # the other worker is idle, yet it waits
    a = wait_for(lambda: terminal(jobs, first.record.id), "the first job to finish", timeout=400)
    b = wait_for(lambda: terminal(jobs, second.id), "the second job to finish", timeout=400)
    assert a.state is b.state is JobState.SUCCEEDED
    a_end = next(e.at for e in a.events if e.kind is JobEventKind.FINISHED)
    b_start = next(e.at for e in b.events if e.kind is JobEventKind.CHUNK_STARTED)
    assert b_start >= a_end  # the two searches of the op never overlapped
    assert any(e.kind is JobEventKind.LOCK_WAIT for e in b.events)


def test_cancel_stops_a_running_job_within_a_generation_and_a_queued_one_before_it_starts(
        redis_server, start_worker, repo):
    worker = start_worker("long", redis_server.url, KERNELEVO_QUEUE_CHUNK_S="400")  # one chunk: no hand-over
    jobs = JobsClient.from_settings(settings_for(redis_server.url))
    running = jobs.submit(build_spec(jobs, repo, candidates=200)).record
    wait_for(lambda: jobs.get(running.id).progress.evaluated >= 1, "the running job to judge a candidate")
    queued = jobs.submit(build_spec(jobs, repo, candidates=2, commit="9" * 40)).record  # the worker is busy
    outcome, record = jobs.cancel(queued.id)
    assert outcome is CancelOutcome.CANCELLED and record.state is JobState.CANCELLED and record.chunks == 0

    assert jobs.cancel(running.id)[0] is CancelOutcome.REQUESTED
    at_cancel = len(archive(jobs, running.id))
    done = wait_for(lambda: terminal(jobs, running.id), "the running job to stop", timeout=300)
    assert done.state is JobState.CANCELLED and done.error == "cancelled by request"
    assert done.result is not None and done.result.stop_reason == "cancelled" and done.chunks == 1
    assert len(archive(jobs, running.id)) - at_cancel <= 2  # at most one generation (of 2) more

    # The worker is free again: the queued job's message is taken and dropped unrun.
    wait_for(lambda: f"{queued.id} epoch 1 on {worker.node}: terminal" in worker.log(),
             "the queued job's message to be dropped")
    assert jobs.get(queued.id).chunks == 0 and jobs.get(queued.id).state is JobState.CANCELLED


BROKEN_TASK = '''"""A task whose inputs cannot be made."""

import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_init_inputs():
    return []


def get_inputs():
    raise RuntimeError("no inputs today")
'''


def test_setup_problems_fail_the_job_with_a_reason_the_user_can_act_on(cluster, tmp_path):
    _, _, jobs, _ = cluster
    repo = make_repo(tmp_path / "other", ("broken.py", BROKEN_TASK))
    missing = jobs.submit(build_spec(jobs, repo, op_id="scale_add.py::Renamed")).record
    broken = jobs.submit(build_spec(jobs, repo, op_id="broken.py::Model")).record
    gone = wait_for(lambda: terminal(jobs, missing.id), "the job of a missing op to fail")
    assert gone.state is JobState.FAILED and gone.error.startswith("op not found at commit")
    assert "scale_add.py::Renamed" in gone.error and "renamed or removed" in gone.error
    bad = wait_for(lambda: terminal(jobs, broken.id), "the job of a broken task to fail", timeout=300)
    assert bad.state is JobState.FAILED and bad.error.startswith("the task for broken.py::Model could not be built")
    assert "get_inputs() raised RuntimeError: no inputs today" in bad.error
