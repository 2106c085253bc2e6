"""The run directory's mirror hook, and its Redis mirror: every record copied as written, a run rebuilt from
the copy and continued by another process exactly as if it had never moved, a stale writer refused."""

import json
import sys
from pathlib import Path

import pytest
from workflow_harness import build_spec

from kernelevo.search.api import run_search
from kernelevo.search.rundir import RunDir, mirror_for, mirrored, read_jsonl, restore_run_dir
from workflows.mirror import RedisRunMirror, RunTooLarge, snapshot
from workflows.models import JobState, WorkerIdentity
from workflows.store import Fenced

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "search"))
from scripted_run import BUDGET, CONFIG  # noqa: E402
from search_doubles import ScriptedEvaluator, ScriptedProposer  # noqa: E402


class Recorder:
    """A RunMirror that remembers what it was told (the hook's contract, without Redis)."""

    def __init__(self):
        self.calls = []

    def appended(self, name, line):
        self.calls.append(("append", name, line))

    def replaced(self, name, text):
        self.calls.append(("replace", name, text))


def test_every_write_of_a_run_directory_reaches_its_mirror_in_order(tmp_path):
    recorder = Recorder()
    run = RunDir(tmp_path / "run", mirror=recorder)
    run.create({"op_id": "x"})
    run.append_proposal({"slot": "g0-0"})
    run.append_candidate({"id": "g0-0"})
    run.write_best("src", {"verdict": "accepted"}, {"id": "g0-0"})
    run.write_summary({"stop_reason": "plateau"})
    assert [(kind, name) for kind, name, _ in recorder.calls] == [
        ("replace", "run.json"), ("append", "proposals.jsonl"), ("append", "archive.jsonl"),
        ("replace", "best/kernel.py"), ("replace", "best/verdict.json"), ("replace", "best/candidate.json"),
        ("replace", "summary.json")]
    files = {name: (tmp_path / "run" / name).read_text() for _, name, _ in recorder.calls}
    copy = {}
    for kind, name, text in recorder.calls:
        copy[name] = copy.get(name, "") + text if kind == "append" else text
    assert copy == files  # the mirror holds exactly the files


def test_a_mirror_attached_to_a_path_is_used_by_every_run_dir_opened_there(tmp_path):
    recorder = Recorder()
    with mirrored(tmp_path / "run", recorder):
        assert RunDir(tmp_path / "run").mirror is recorder and mirror_for(tmp_path / "run" / ".." / "run")
        with pytest.raises(RuntimeError, match="already has a mirror"):
            with mirrored(tmp_path / "run", Recorder()):
                pass
    assert RunDir(tmp_path / "run").mirror is None


@pytest.mark.parametrize("name", ["/etc/x", "../x", "best/../../x", "", "a\\b"])
def test_restoring_refuses_names_outside_the_run(tmp_path, name):
    with pytest.raises(ValueError, match="not a file name inside a run directory"):
        restore_run_dir(tmp_path / "run", {name: "x"})
    assert not (tmp_path / "x").exists()


def test_restoring_refuses_a_directory_that_holds_a_run(tmp_path):
    RunDir(tmp_path / "run").create({})
    with pytest.raises(FileExistsError):
        restore_run_dir(tmp_path / "run", {"run.json": "{}"})


W = WorkerIdentity(node="w@test", pid=1, device="cpu")


def comparable(records):
    return sorted((r["id"], r["source_sha"], r["fitness"], r["operator"], r["kind"]) for r in records)


def test_chunks_on_fresh_directories_rebuilt_from_redis_add_up_to_one_uninterrupted_run(jobs, repo, tmp_path):
    """What a worker does, minus Celery: claim, rebuild the run from Redis, search a little, hand over."""
    task = tmp_path / "task.py"
    task.write_text("# task\n")
    reference = tmp_path / "reference"
    run_search(task, op_id="demo", backend="triton", proposer=ScriptedProposer(), budget=BUDGET, device="cuda",
               run_dir=reference, seed=4, config=CONFIG, evaluator=ScriptedEvaluator())

    job = jobs.submit(build_spec(jobs, repo)).record
    store, epoch, reasons, evaluations = jobs.store, 1, [], 0
    while not reasons or reasons[-1] == "cancelled":
        worker = WorkerIdentity(node=f"w{epoch}@test", pid=epoch, device="cpu")  # a different worker each time
        assert store.claim(job.id, epoch, worker).outcome.value == "run"
        run_dir = tmp_path / f"chunk-{epoch}"
        mirror = RedisRunMirror.restore(store.client, store.keys, job.id, epoch, worker, run_dir, max_bytes=2**26)
        evaluator, new = ScriptedEvaluator(), []
        with mirrored(run_dir, mirror):
            result = run_search(task, op_id="demo", backend="triton", proposer=ScriptedProposer(), budget=BUDGET,
                                device="cuda", run_dir=run_dir, seed=4, config=CONFIG, evaluator=evaluator,
                                resume=True, on_progress=lambda p, new=new: new.append(p) if p.event == "candidate"
                                and not p.last.get("replayed") else None, should_cancel=lambda new=new: len(new) >= 7)
        mirror.close()
        reasons.append(result.stop_reason)
        evaluations += len(evaluator.calls)
        if result.stop_reason == "cancelled":
            epoch = store.end_chunk(job.id, epoch, worker).epoch
        else:
            store.finish(job.id, epoch, worker, JobState.SUCCEEDED)
    assert len(reasons) > 3 and evaluations == BUDGET.candidates  # nothing judged twice across the chunks
    files, _ = snapshot(store.client, store.keys, job.id)
    archive = [json.loads(line) for line in files["archive.jsonl"].splitlines()]
    assert comparable(archive) == comparable(read_jsonl(reference / "archive.jsonl"))
    assert [s["reason"] for s in json.loads(files["summary.json"])["stop_reasons"]] == reasons
    assert files["best/kernel.py"] == (reference / "best" / "kernel.py").read_text()


def test_a_stale_writer_is_fenced_and_retries_are_not_duplicated(jobs, repo, tmp_path):
    job = jobs.submit(build_spec(jobs, repo)).record
    store = jobs.store
    store.claim(job.id, 1, W)
    mirror = RedisRunMirror.restore(store.client, store.keys, job.id, 1, W, tmp_path / "run", max_bytes=200)
    mirror.appended("archive.jsonl", "one\n")
    mirror.counts["archive.jsonl"] = 0
    mirror.appended("archive.jsonl", "one\n")  # the same append again (a retry after a lost reply)
    assert store.client.lrange(store.keys.run_lines(job.id, "archive.jsonl"), 0, -1) == [b"one\n"]
    mirror.counts["archive.jsonl"] = 0
    with pytest.raises(Exception, match="DIVERGED"):
        mirror.appended("archive.jsonl", "two\n")
    mirror.counts["archive.jsonl"] = 1
    with pytest.raises(RunTooLarge, match="KERNELEVO_QUEUE_RUN_MAX_BYTES"):
        mirror.replaced("summary.json", "x" * 300)
    store.end_chunk(job.id, 1, W)
    with pytest.raises(Fenced):
        mirror.appended("archive.jsonl", "late\n")
    with pytest.raises(Fenced):
        mirror.replaced("summary.json", "{}")
    files, counts = snapshot(store.client, store.keys, job.id)
    assert files == {"archive.jsonl": "one\n"} and counts == {"archive.jsonl": 1}
