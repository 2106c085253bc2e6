"""``kernelevo report JOB.json``: a job record as ``kernelevo jobs show --json`` prints it (the worker tier's own
models and its own summary -> result conversion), for a finished job and for one that failed."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kernelevo.cli import app
from kernelevo.report.build import build, read_records
from kernelevo.report.markdown import render_markdown
from kernelevo.report.model import Status
from workflows.models import Budgets, JobRecord, JobSpec, JobState, Origin, OriginKind, RepoSource, SearchShape
from workflows.store import result_from_summary


def job_json(tmp_path: Path, run: Path | None, *, state: JobState, error: str | None = None) -> Path:
    """The record of a job that ran ``run``'s search (None: it never produced a result), as JSON on disk."""
    spec = JobSpec(repo="acme/models", commit_sha="c" * 40, op_id="ops/norm.py::rms_norm",
                   source=RepoSource(blob_key="blob", sha256="0" * 64, size_bytes=1), device="cuda",
                   backend="triton", proposer="llm", seed=3, budgets=Budgets(candidates=16, tokens=100000),
                   shape=SearchShape(generation_size=6), origin=Origin(kind=OriginKind.PR, pr_number=4))
    result = result_from_summary(json.loads((run / "summary.json").read_text())) if run is not None else None
    record = JobRecord(id="job-0123", spec=spec, state=state, result=result, error=error)
    path = tmp_path / "job.json"
    path.write_text(json.dumps(record.model_dump(mode="json", exclude={"last_write"})))
    return path


def test_a_finished_jobs_record_names_its_winner_and_how_to_rerun_it(gpu_run, tmp_path):
    report = build(read_records(job_json(tmp_path, gpu_run, state=JobState.SUCCEEDED)))
    assert report.status is Status.IMPROVED and report.winner is not None
    assert report.winner.id == "g3-0"  # the job result's best_id, as in the run's archive
    assert report.timeline is None and report.lineage is None  # a job record holds no per-candidate records
    text = render_markdown(report)
    assert "candidate `g3-0`" in text and "rejections not in these records" in text
    (command,) = text.split("```bash\n", 1)[1].split("\n```", 1)[0].splitlines()
    assert command == ("git checkout " + "c" * 40 + " && kernelevo optimize ops/norm.py --op ops/norm.py::rms_norm"
                       " --backend triton --device cuda --seed 3 --budget-candidates 16 --budget-tokens 100000"
                       " --plateau 6 --generation-size 6 --proposer llm")


def test_a_failed_jobs_record_is_a_failure_report(tmp_path):
    error = "the worker ran out of memory importing ops/norm.py (MemoryError)"
    path = job_json(tmp_path, None, state=JobState.FAILED, error=error)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["report", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = (out / "report.md").read_text()
    assert f"**Result (failed):** the job failed: {error}." in text
    section = text.split("### What went wrong", 1)[1].split("###", 1)[0]
    assert f"the job did not finish: {error}" in section and "What to try:" in section and "run it again" in section
    assert "Nothing was timed: no kernel passed verification" in text
    # a GPU job that never ran: its GPU time is unknown, not "a CPU run"; no generation count it does not have
    assert "- GPU time: not measured" in text and "generation" not in text.split("### Search", 1)[1].split("\n- ")[1]
    assert not (out / "plots").exists() or not any((out / "plots").iterdir())
