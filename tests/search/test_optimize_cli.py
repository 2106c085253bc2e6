"""``kernelevo optimize`` end to end on CPU with the real evaluator, and its argument errors."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelevo.cli import app
from kernelevo.settings import reset_settings_cache

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def optimize(*args, cwd):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", "kernelevo.cli", "optimize", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_optimize_on_cpu_with_the_real_evaluator_then_resume_and_write_the_kernel(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)  # a repository root for discovery and the kernel store
    shutil.copy(HERE / "data" / "scale_add.py", repo / "scale_add.py")
    runs = tmp_path / "runs"
    common = ["--proposer", "search_doubles:KnownGoodProposer", "--device", "cpu", "--runs-dir", str(runs),
              "--generation-size", "2", "--seed", "7"]  # seed 7: g0-1 has the wrong math

    first = optimize("scale_add.py", "--budget-candidates", "3", "--plateau", "50", "--json-lines",
                     "--parallel-evaluations", "2", *common, cwd=repo)  # two judged at once by one session
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr
    events = [json.loads(line) for line in first.stdout.splitlines()]
    assert [e["event"] for e in events if e["event"] != "candidate"][-2:] == ["done", "result"]
    result = events[-1]
    assert result["stop_reason"] == "budget_candidates" and result["candidates_evaluated"] == 3
    assert result["best"]["verdict"]["verdict"] == "accepted" and not result["timed"]
    assert "timings need a GPU" in result["note"] or "Speedups need a GPU" in result["note"]
    run_dir = Path(result["run_dir"])
    archive = [json.loads(line) for line in (run_dir / "archive.jsonl").read_text().splitlines()]
    reasons = {r["id"]: r["verdict"]["reason"] for r in archive}
    assert "incorrect" in reasons.values() and "ok" in reasons.values()  # the wrong-math kernel was caught
    assert (run_dir / "best" / "kernel.py").read_text() == result["best"]["source"]
    assert json.loads((run_dir / "run.json").read_text())["config"]["parallel_evaluations"] == 2

    second = optimize("--resume", str(run_dir), "--budget-candidates", "5", "--quiet", "--write-kernel",
                      *common[:2], cwd=repo)
    assert second.returncode == 0, second.stderr
    assert "stopped (budget_candidates) after 5 candidates" in second.stdout
    archive = [json.loads(line) for line in (run_dir / "archive.jsonl").read_text().splitlines()]
    assert len(archive) == len({r["id"] for r in archive})  # resumed: nothing judged twice
    assert sum(r["kind"] == "evaluated" for r in archive) == 5
    summary = json.loads((run_dir / "summary.json").read_text())
    assert [s["reason"] for s in summary["stop_reasons"]] == ["budget_candidates", "budget_candidates"]
    kernel_dir = repo / "kernels" / "scale_add"
    assert (kernel_dir / "kernel.py").read_text() == summary["best"]["source"]
    manifest = json.loads((kernel_dir / "manifest.json").read_text())
    assert manifest["op_id"] == "scale_add.py::Model" and manifest["envelope"]["device_type"] == "cpu"


@pytest.mark.parametrize(("args", "message"), [
    (["nowhere.py", "--proposer", "search_doubles:KnownGoodProposer"], "no such file"),
    (["--proposer", "nope"], "unknown proposer"),  # no PATH: the bundled example, so the proposer decides
    ([str(HERE / "data" / "scale_add.py"), "--backend", "rocm"], "--backend must be"),
    ([str(HERE / "data" / "scale_add.py"), "--proposer", "nope"], "unknown proposer"),
    ([str(HERE / "data" / "scale_add.py"), "--proposer", "search_doubles:Missing"], "has no 'Missing'"),
    ([str(HERE / "data" / "scale_add.py"), "--proposer", "search_doubles:KnownGoodProposer", "--op", "other"],
     "no op named 'other'"),
    ([str(HERE / "data"), "--resume", "x"], "not both"),
    ([str(HERE / "data" / "scale_add.py"), "--parallel-evaluations", "0"], "--parallel-evaluations"),
    ([str(HERE / "data" / "scale_add.py"), "--proposer", "llm"], "needs an endpoint: set KERNELEVO_LLM_BASE_URL"),
])
def test_bad_arguments_exit_2_with_a_message(args, message, monkeypatch, request):
    monkeypatch.delenv("KERNELEVO_LLM_BASE_URL", raising=False)
    reset_settings_cache()
    request.addfinalizer(reset_settings_cache)
    result = CliRunner().invoke(app, ["optimize", *args])
    assert result.exit_code == 2
    assert message in result.output


DECORATED_OP = '''
import torch
import kernelevo


@kernelevo.optimize(
    inputs=lambda device: [(torch.randn(4096, 512, device=device), torch.randn(512, device=device))],
    small_inputs=lambda device: [(torch.randn(33, 512, device=device), torch.randn(512, device=device))],
)
def bias_gelu(x, b):
    return torch.nn.functional.gelu(x + b)
'''


@pytest.mark.slow
def test_a_decorated_op_with_the_offline_proposer_ends_as_a_stored_kernel(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "ops.py").write_text(DECORATED_OP)
    done = optimize("ops.py", "--device", "cpu", "--proposer", "offline", "--budget-candidates", "2", "--quiet",
                    "--write-kernel", "--runs-dir", str(tmp_path / "runs"), cwd=repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ops.py::bias_gelu: stopped" in done.stdout and "Speedups need a GPU" in done.stdout
    [run_dir] = (tmp_path / "runs").iterdir()
    assert "ops.py::bias_gelu" in (run_dir / "task.py").read_text()  # the generated task travels with the run
    manifest = json.loads((repo / "kernels" / "bias_gelu" / "manifest.json").read_text())
    assert manifest["op_id"] == "ops.py::bias_gelu" and manifest["kind"] == "function"
    assert (repo / "kernels" / "bias_gelu" / "kernel.py").read_text() == (run_dir / "best" / "kernel.py").read_text()


def test_no_path_searches_the_bundled_example_on_cpu(tmp_path):
    """The README's main job: no PATH, no GPU, no endpoint — the embedded RMSNorm op, offline proposer."""
    result = CliRunner().invoke(app, ["optimize", "--device", "cpu", "--proposer", "offline", "--budget-candidates",
                                      "2", "--quiet", "--runs-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "rms_norm" in result.output and "Speedups need a GPU" in result.output
    [run_dir] = list(tmp_path.iterdir())
    archive = [json.loads(line) for line in (run_dir / "archive.jsonl").read_text().splitlines()]
    assert any((r.get("verdict") or {}).get("verdict") == "accepted" for r in archive)
