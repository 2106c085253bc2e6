"""The job seam: LocalRunner's states, idempotency, cancellation, hooks, and one run of the real search."""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
from pathlib import Path

import pytest

from kernelevo.jobs import JobHooks, JobRequest, LocalRunner, default_task_path

SEARCH_DATA = Path(__file__).resolve().parents[1] / "search" / "data"


def request(**changes) -> JobRequest:
    base = dict(repo="a/b", pr_number=3, head_sha="c" * 40, base_ref="feature", ops=["ops/x.py::f"],
                backend="triton", budget_tokens=1000, model=None, requested_by="alice", installation_id=1)
    return JobRequest(**{**base, **changes})


def fixed_workspace(root: Path):
    @contextlib.contextmanager
    def provider(repo, sha):
        yield root
    return provider


class Recorder(JobHooks):
    def __init__(self, refuse: str | None = None) -> None:
        self.refuse, self.progress, self.finished = refuse, [], []
        self.done = threading.Event()

    def before_start(self, job_id, req):
        return self.refuse

    def on_progress(self, job_id, req, op_id, progress):
        self.progress.append((op_id, progress))

    def on_finished(self, job_id, req, status):
        self.finished.append(status)
        self.done.set()


def runner(tmp_path, search, hooks=None):
    return LocalRunner(fixed_workspace(tmp_path), search=search, hooks=hooks or Recorder(),
                       make_proposer=lambda r: "proposer", make_budget=lambda r: "budget",
                       task_path=lambda ws, op, rd: ws / "task.py", runs_root=tmp_path / "runs", device="cpu")


def test_idempotency_key_covers_repo_pr_op_set_and_sha():
    assert request().idempotency_key() == request(ops=["ops/x.py::f", "ops/x.py::f"], backend="cuda",
                                                  requested_by="bob").idempotency_key()
    assert request(ops=["a", "b"]).idempotency_key() == request(ops=["b", "a"]).idempotency_key()
    for change in ({"head_sha": "d" * 40}, {"pr_number": 4}, {"repo": "a/c"}, {"ops": ["ops/y.py::g"]}):
        assert request(**change).idempotency_key() != request().idempotency_key()
    assert json.loads(json.dumps(request().to_dict()))["ops"] == ["ops/x.py::f"]


def test_job_runs_search_per_op_and_reports(tmp_path):
    calls = []

    def search(task_path, *, op_id, backend, proposer, budget, device, run_dir, on_progress, should_cancel):
        calls.append((task_path, op_id, backend, proposer, budget, device, Path(run_dir).is_dir()))
        on_progress({"generation": 0, "evaluated": 1})
        return {"op_id": op_id, "best": None, "stop_reason": "budget_candidates"}

    hooks = Recorder()
    r = runner(tmp_path, search, hooks)
    job = r.submit(request(ops=["ops/x.py::f", "ops/y.py::g"]))
    status = r.wait(job, 10)
    assert status.state == "succeeded" and set(status.result["ops"]) == {"ops/x.py::f", "ops/y.py::g"}
    assert [c[1] for c in calls] == ["ops/x.py::f", "ops/y.py::g"]
    assert calls[0][2:] == ("triton", "proposer", "budget", "cpu", True)
    assert [p[0] for p in hooks.progress] == ["ops/x.py::f", "ops/y.py::g"]
    assert hooks.done.wait(5) and hooks.finished[0].state == "succeeded"
    assert r.find("a/b", 3)[0].job_id == job and r.find("a/b", 4) == []


def test_duplicate_submission_returns_the_same_job(tmp_path):
    gate = threading.Event()

    def search(task_path, **kw):
        gate.wait(5)
        return {"best": None}

    r = runner(tmp_path, search)
    first = r.submit(request())
    assert r.submit(request(requested_by="bob")) == first
    gate.set()
    assert r.wait(first, 5).state == "succeeded"
    assert r.submit(request()) == first  # finished successfully: still the same result


def test_cancel_is_cooperative(tmp_path):
    started = threading.Event()

    def search(task_path, *, should_cancel, **kw):
        started.set()
        while not should_cancel():
            threading.Event().wait(0.01)
        return {"best": None, "stop_reason": "cancelled"}

    r = runner(tmp_path, search)
    job = r.submit(request())
    assert started.wait(5)
    assert r.cancel(job)
    status = r.wait(job, 5)
    assert status.state == "cancelled" and status.error == "cancelled by request"
    assert not r.cancel(job) and not r.cancel("job-unknown")
    assert r.submit(request()) != job  # a cancelled job can be requested again


def test_refused_and_failing_jobs(tmp_path):
    r = runner(tmp_path, lambda *a, **k: {"best": None}, Recorder(refuse="the PR head moved"))
    status = r.wait(r.submit(request()), 5)
    assert status.state == "cancelled" and status.error == "the PR head moved"

    def broken(*a, **k):
        raise RuntimeError("evaluator exploded")

    hooks = Recorder()
    r = runner(tmp_path, broken, hooks)
    status = r.wait(r.submit(request()), 5)
    assert status.state == "failed" and "RuntimeError: evaluator exploded" in status.error
    assert hooks.done.wait(5) and hooks.finished[0].state == "failed"


def test_task_path_of_task_files_decorated_ops_and_missing_ops(tmp_path):
    shutil.copy(SEARCH_DATA / "scale_add.py", tmp_path / "scale_add.py")
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "f.py").write_text("import kernelevo\n\n\n@kernelevo.optimize()\ndef f(x):\n    return x\n")
    assert default_task_path(tmp_path, "scale_add.py::Model", tmp_path / "run") == tmp_path / "scale_add.py"
    generated = default_task_path(tmp_path, "ops/f.py::f", tmp_path / "run")
    assert generated == tmp_path / "run" / "task.py" and "ops/f.py::f" in generated.read_text()
    with pytest.raises(LookupError, match="renamed or removed"):
        default_task_path(tmp_path, "ops/f.py::g", tmp_path / "run")
    with pytest.raises(FileNotFoundError):
        default_task_path(tmp_path, "../etc/passwd::x", tmp_path / "run")


def test_jobs_queue_for_the_device_one_at_a_time(tmp_path):
    gate, running, peak = threading.Event(), [], []

    def search(task_path, *, op_id, **kw):
        running.append(op_id)
        peak.append(len(running))
        gate.wait(5)
        running.remove(op_id)
        return {"best": None}

    r = runner(tmp_path, search)
    first = r.submit(request(ops=["a.py"]))
    second = r.submit(request(ops=["b.py"]))
    deadline = threading.Event()
    while r.status(first).state != "running" and not deadline.wait(0.01):
        pass
    assert r.status(second).state == "queued"
    assert r.cancel(second)  # cancelled while waiting: never starts
    gate.set()
    assert r.wait(first, 5).state == "succeeded"
    assert r.wait(second, 5).state == "cancelled" and max(peak) == 1
