"""Recovery with real processes: `kill -9` of the worker running a chunk, a Redis restart, and the reaper
bringing back a job whose only worker died. Each test has its own redis-server and workers."""

from __future__ import annotations

import json
import shutil

import pytest
from workflow_harness import SCALE_ADD, build_spec, parent_pid, settings_for, wait_for

from workflows.client import JobsClient
from workflows.models import JobEventKind, JobState

pytestmark = pytest.mark.slow


def terminal(jobs, job_id):
    record = jobs.get(job_id)
    return record if record is not None and record.state.terminal else None


def archive(jobs, job_id):
    raw = jobs.store.client.lrange(jobs.store.keys.run_lines(job_id, "archive.jsonl"), 0, -1)
    return [json.loads(line) for line in raw]


def comparable(records):
    return sorted((r["id"], r["source_sha"], r["kind"], r["accepted"]) for r in records)


def judging(jobs, job_id, node=None):
    """The record once a chunk (on ``node``, if given) is running and has judged a candidate."""
    record = jobs.get(job_id)
    if record.owner and (node is None or record.owner == node) and record.progress.evaluated >= 1:
        return record if jobs.store.lease_alive(job_id) else None
    return None


def reference_run(tmp_path, candidates, seed):
    """The same search, uninterrupted and in-process, for comparison."""
    from kernelevo.search.api import run_search
    from kernelevo.search.budget import Budget
    from kernelevo.search.config import SearchConfig
    from kernelevo.search.proposers import make_proposer
    from kernelevo.search.rundir import read_jsonl

    task = tmp_path / "reference-task" / "scale_add.py"
    task.parent.mkdir()
    shutil.copy(SCALE_ADD, task)
    run_search(task, op_id="scale_add.py::Model", backend="triton", proposer=make_proposer("offline"),
               budget=Budget(candidates=candidates, plateau_generations=50), device="cpu",
               run_dir=tmp_path / "reference", seed=seed, config=SearchConfig(generation_size=2))
    return read_jsonl(tmp_path / "reference" / "archive.jsonl")


def test_kill_9_of_the_worker_running_a_chunk_loses_and_repeats_no_candidate(redis_server, start_worker, repo,
                                                                            tmp_path):
    workers = {w.node: w for w in (start_worker(name, redis_server.url, KERNELEVO_QUEUE_CHUNK_S="8")
                                   for name in ("k1", "k2"))}
    jobs = JobsClient.from_settings(settings_for(redis_server.url))
    job = jobs.submit(build_spec(jobs, repo, candidates=4, seed=3)).record

    running = wait_for(lambda: judging(jobs, job.id), "a chunk to be judging candidates")
    victim = workers[running.owner]
    assert parent_pid(running.owner_pid) == victim.pid  # the chunk runs in that worker's child process
    victim.kill9()
    assert jobs.get(job.id).owner == victim.node  # killed mid-chunk: the record still names the dead worker

    done = wait_for(lambda: terminal(jobs, job.id), "the job to finish on the other worker", timeout=400)
    assert done.state is JobState.SUCCEEDED, done.error
    assert done.recoveries == 1
    recovered = max(i for i, e in enumerate(done.events) if e.kind is JobEventKind.RECOVERED)
    after = {e.owner for e in done.events[recovered:] if e.kind is JobEventKind.CHUNK_STARTED}
    assert after == set(workers) - {victim.node}

    records = archive(jobs, job.id)
    assert len(records) == len({r["id"] for r in records})  # no candidate evaluated twice
    assert comparable(records) == comparable(reference_run(tmp_path, candidates=4, seed=3))  # none lost


def test_a_redis_restart_loses_no_job_record_and_the_job_still_completes(redis_server, start_worker, repo):
    start_worker("r1", redis_server.url)
    jobs = JobsClient.from_settings(settings_for(redis_server.url))
    finished = jobs.submit(build_spec(jobs, repo, candidates=1, commit="0" * 40)).record
    wait_for(lambda: terminal(jobs, finished.id), "a first job to finish", timeout=300)
    job = jobs.submit(build_spec(jobs, repo, candidates=3, seed=5)).record
    before = wait_for(lambda: judging(jobs, job.id), "the job to be judging candidates")

    redis_server.shutdown()  # what an operator's restart does: Redis stops cleanly, its AOF synced
    redis_server.start()

    after = jobs.get(job.id)
    assert after.id == before.id and after.spec == before.spec and after.created_at == before.created_at
    assert after.chunks >= before.chunks and len(archive(jobs, job.id)) >= 1
    assert terminal(jobs, finished.id).state is JobState.SUCCEEDED  # finished jobs survive too
    done = wait_for(lambda: terminal(jobs, job.id), "the job to finish after the restart", timeout=400)
    assert done.state is JobState.SUCCEEDED, done.error
    assert done.result.summary["candidates_evaluated"] == 3
    ids = [r["id"] for r in archive(jobs, job.id)]
    assert len(ids) == len(set(ids))


def test_the_reaper_recovers_a_job_whose_only_worker_died(redis_server, start_worker, repo):
    first = start_worker("d1", redis_server.url, KERNELEVO_QUEUE_CHUNK_S="400")
    jobs = JobsClient.from_settings(settings_for(redis_server.url))
    job = jobs.submit(build_spec(jobs, repo, candidates=3, seed=7)).record
    wait_for(lambda: judging(jobs, job.id, first.node), "the job to be judging candidates")
    first.kill9()

    wait_for(lambda: not jobs.store.lease_alive(job.id), "the dead chunk's lease to lapse")
    stuck = jobs.get(job.id)
    assert stuck.state is JobState.RUNNING and stuck.owner == first.node  # no worker up: nobody reaped it

    second = start_worker("d2", redis_server.url)
    done = wait_for(lambda: terminal(jobs, job.id), "the job to finish on the new worker", timeout=400)
    assert done.state is JobState.SUCCEEDED, done.error
    assert done.recoveries == 1 and any(e.kind is JobEventKind.RECOVERED for e in done.events)
    assert any(e.kind is JobEventKind.CHUNK_STARTED and e.owner == second.node for e in done.events)
    ids = [r["id"] for r in archive(jobs, job.id)]
    assert len(ids) == len(set(ids)) and done.result.summary["candidates_evaluated"] == 3
