"""Durability: kill -9 a real search process mid-run, resume it, and lose or repeat nothing."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from scripted_run import BUDGET, CONFIG
from search_doubles import ScriptedEvaluator, ScriptedProposer

from kernelevo.search.api import run_search
from kernelevo.search.rundir import read_jsonl

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def comparable(run_dir):
    """Records by id: CONFIG runs three evaluations at once, which append in completion order."""
    return sorted((r["id"], r["source_sha"], r["fitness"], r["parent_ids"], r["operator"], r["island"], r["kind"])
                  for r in read_jsonl(run_dir / "archive.jsonl"))


def resume(task, run_dir, evaluator, proposer):
    return run_search(task, op_id="demo", backend="triton", proposer=proposer, budget=BUDGET, device="cuda",
                      run_dir=run_dir, seed=999, evaluator=evaluator, resume=True)  # the run's own seed wins


def test_resume_after_kill_9_repeats_and_loses_nothing(tmp_path):
    task = tmp_path / "task.py"
    task.write_text("# task\n")
    reference = tmp_path / "reference"
    run_search(task, op_id="demo", backend="triton", proposer=ScriptedProposer(), budget=BUDGET, device="cuda",
               run_dir=reference, seed=11, config=CONFIG, evaluator=ScriptedEvaluator())

    run_dir = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT)])}
    proc = subprocess.Popen([sys.executable, str(HERE / "scripted_run.py"), str(task), str(run_dir), "-", "0.05"],
                            env=env, cwd=ROOT)
    deadline = time.monotonic() + 120
    while len(read_jsonl(run_dir / "archive.jsonl")) < 12:
        assert proc.poll() is None, "the search process ended before it could be killed"
        assert time.monotonic() < deadline, "the search process made no progress"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    before = {r["id"] for r in read_jsonl(run_dir / "archive.jsonl")}
    logged_slots = {r["slot"] for r in read_jsonl(run_dir / "proposals.jsonl")}
    assert 12 <= len(before) < BUDGET.candidates and not (run_dir / "summary.json").exists()

    evaluator, proposer = ScriptedEvaluator(), ScriptedProposer()
    result = resume(task, run_dir, evaluator, proposer)
    assert result.stop_reason == "budget_candidates" and result.candidates_evaluated == BUDGET.candidates
    assert not before & {name.removeprefix("demo-") for name in evaluator.calls}  # nothing judged twice
    slots = {r["slot"] for r in read_jsonl(run_dir / "proposals.jsonl")}
    assert len(proposer.requests) == len(slots - logged_slots)  # no logged reply asked for again
    assert comparable(run_dir) == comparable(reference)  # the same run as if it had never been killed


def test_resume_tolerates_a_truncated_last_line(tmp_path):
    task = tmp_path / "task.py"
    task.write_text("# task\n")
    run_dir = tmp_path / "run"
    small = BUDGET.__class__(candidates=10, plateau_generations=None)
    run_search(task, op_id="demo", backend="triton", proposer=ScriptedProposer(), budget=small, device="cuda",
               run_dir=run_dir, seed=1, evaluator=ScriptedEvaluator())
    records = read_jsonl(run_dir / "archive.jsonl")
    # Simulate a kill in the middle of writing the last record.
    lines = (run_dir / "archive.jsonl").read_text().splitlines(keepends=True)
    (run_dir / "archive.jsonl").write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    assert len(read_jsonl(run_dir / "archive.jsonl")) == len(records) - 1
    evaluator = ScriptedEvaluator()
    result = run_search(task, op_id="demo", backend="triton", proposer=ScriptedProposer(), budget=small,
                        device="cuda", run_dir=run_dir, evaluator=evaluator, resume=True)
    assert [name.removeprefix("demo-") for name in evaluator.calls] == [records[-1]["id"]]
    assert [r["id"] for r in read_jsonl(run_dir / "archive.jsonl")] == [r["id"] for r in records]
    assert result.candidates_evaluated == 10 and len(result.stop_reasons) == 2


def new_candidates(progress):
    return sum(1 for p in progress if p.event == "candidate" and not p.last.get("replayed"))


def test_chunks_that_cancel_and_resume_add_up_to_one_uninterrupted_run(tmp_path):
    task = tmp_path / "task.py"
    task.write_text("# task\n")
    reference = tmp_path / "reference"
    run_search(task, op_id="demo", backend="triton", proposer=ScriptedProposer(), budget=BUDGET, device="cuda",
               run_dir=reference, seed=4, config=CONFIG, evaluator=ScriptedEvaluator())
    chunked, reasons, evaluations = tmp_path / "chunked", [], 0
    while not reasons or reasons[-1] == "cancelled":
        evaluator, progress = ScriptedEvaluator(), []
        result = run_search(task, op_id="demo", backend="triton", proposer=ScriptedProposer(), budget=BUDGET,
                            device="cuda", run_dir=chunked, seed=4, config=CONFIG, evaluator=evaluator,
                            resume=True, on_progress=progress.append,
                            should_cancel=lambda progress=progress: new_candidates(progress) >= 5)
        reasons.append(result.stop_reason)
        evaluations += len(evaluator.calls)
    assert reasons[-1] == "budget_candidates" and len(reasons) > 3
    assert evaluations == BUDGET.candidates  # every chunk continued where the last one stopped
    assert comparable(chunked) == comparable(reference)
    summary = json.loads((chunked / "summary.json").read_text())
    assert [s["reason"] for s in summary["stop_reasons"]] == reasons
