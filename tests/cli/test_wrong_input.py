"""Wrong input to the CLI is an immediate, clear error with a non-zero exit (issue: a typo in CI must not
stay green), and a refused ``optimize`` leaves no run directory behind."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelevo.cli import app
from kernelevo.discovery import discover
from kernelevo.kernel_store import envelope_from_cases, write_kernel

FIXTURES = Path(__file__).parents[1] / "fixtures" / "repos"
BROKEN = "import kernelevo\n\n\n@kernelevo.optimize(\ndef op(x:\n    return x\n"


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_verify_of_a_path_that_does_not_exist_or_is_a_file_fails(tmp_path):
    missing = invoke("verify", str(tmp_path / "nope"))
    assert missing.exit_code == 2
    assert "nope: no such directory" in missing.output and "repository root" in missing.output
    (tmp_path / "ops.py").write_text("x = 1\n")
    a_file = invoke("verify", str(tmp_path / "ops.py"))
    assert a_file.exit_code == 2 and "is a file" in a_file.output


def test_verify_takes_a_repository_its_kernels_folder_or_one_kernel_directory(tmp_path):
    """The bot's reports suggest ``kernelevo verify kernels/<op>``: that names one kernel, not an empty repo."""
    import torch

    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "verify", repo)
    op = next(o for o in discover(repo).ops if o.qualname == "scale_shift")
    envelope = envelope_from_cases([(torch.randn(4, 37),)], device_type="cpu", capabilities=None, backend="triton")
    directory = write_kernel(repo, op, (repo / "kernel_ok.py").read_text(), {"verdict": "accepted"}, envelope)
    (repo / "ops" / "scale.py").write_text((repo / "ops" / "scale.py").read_text().replace("+ 1.0", "+ 2.0"))
    for path in (repo, repo / "kernels", directory):  # stale everywhere: found, and failing without the verifier
        result = invoke("verify", str(path), "--json")
        assert result.exit_code == 1, (path, result.output)
        assert [k["status"] for k in json.loads(result.output)["kernels"]] == ["stale"]


def test_verify_of_a_repository_without_kernels_says_there_is_nothing_to_verify(tmp_path):
    result = invoke("verify", str(tmp_path))
    assert result.exit_code == 0 and "nothing to verify" in result.output


def test_discover_of_a_path_that_does_not_exist_fails(tmp_path):
    result = invoke("discover", str(tmp_path / "nope"))
    assert result.exit_code == 2 and "no such file or directory" in result.output


@pytest.mark.parametrize("as_json", [False, True])
def test_discover_of_a_file_with_a_syntax_error_fails_naming_file_and_line(tmp_path, as_json):
    (tmp_path / ".git").mkdir()
    (tmp_path / "ops.py").write_text(BROKEN)
    result = invoke("discover", str(tmp_path / "ops.py"), *(["--json"] if as_json else []))
    assert result.exit_code == 1, result.output
    assert "could not be scanned" in result.output
    if as_json:
        payload = result.output[: result.output.rindex("}") + 1]
        assert json.loads(payload)["errors"] == [{"path": "ops.py", "line": 5, "message": "does not parse: "
                                                  "invalid syntax"}]
    else:
        assert "ops.py:5: does not parse" in result.output
    whole_repo = invoke("discover", str(tmp_path))  # the same file found by scanning the repository
    assert whole_repo.exit_code == 1 and "ops.py:5: does not parse" in whole_repo.output


def test_discover_of_a_file_without_ops_fails_and_says_how_to_mark_one(tmp_path):
    (tmp_path / "plain.py").write_text("def f(x):\n    return x\n")
    result = invoke("discover", str(tmp_path / "plain.py"))
    assert result.exit_code == 1 and "no ops found" in result.output and "@kernelevo.optimize" in result.output


def test_discover_of_a_good_file_lists_its_ops_with_repository_relative_ids(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "verify", repo)
    (repo / ".git").mkdir()
    result = invoke("discover", str(repo / "ops" / "scale.py"), "--json")
    assert result.exit_code == 0, result.output
    assert [o["op_id"] for o in json.loads(result.output)["ops"]] == ["ops/scale.py::scale_shift"]


@pytest.mark.parametrize(("flag", "value"), [
    ("--budget-candidates", "0"), ("--budget-candidates", "-3"), ("--budget-minutes", "-1"),
    ("--budget-minutes", "0"), ("--budget-usd", "-1"), ("--budget-tokens", "0"), ("--plateau", "0"),
])
def test_non_positive_budgets_are_refused_before_anything_runs(tmp_path, flag, value):
    runs = tmp_path / "runs"
    task = Path(__file__).parents[1] / "search" / "data" / "scale_add.py"
    result = invoke("optimize", str(task), "--device", "cpu", "--proposer", "offline", "--runs-dir", str(runs),
                    flag, value)
    assert result.exit_code == 2, result.output
    assert f"{flag} must be positive" in result.output and f"not {value}" in result.output
    assert "leave it out for the default" in result.output
    assert not runs.exists()  # refused before a run directory was made


@pytest.mark.parametrize("limits", [{"candidates": 0}, {"minutes": -1.0}, {"usd": 0.0}, {"plateau_generations": 0}])
def test_the_search_api_refuses_a_budget_that_can_evaluate_nothing(tmp_path, limits):
    """The same rule for every caller of run_search (bench scripts, workers), not only the CLI."""
    from kernelevo.search.api import run_search
    from kernelevo.search.budget import Budget

    with pytest.raises(ValueError, match=f"{next(iter(limits))}="):
        run_search(tmp_path / "task.py", op_id="t.py::Model", backend="triton", proposer=object(),  # type: ignore[arg-type]
                   budget=Budget(**limits), device="cpu", run_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_discover_of_a_file_refuses_the_diff_options(tmp_path):
    (tmp_path / "ops.py").write_text("x = 1\n")
    result = invoke("discover", str(tmp_path / "ops.py"), "--base", "HEAD")
    assert result.exit_code == 2 and "give its folder as PATH" in result.output


def test_an_invalid_setting_is_one_line_naming_the_variable_and_exit_2():
    """`KERNELEVO_GITHUB_APP_ID=abc` used to end in a pydantic traceback; a secret's value is never echoed."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "KERNELEVO_GITHUB_APP_ID": "abc", "KERNELEVO_BOT_WORKERS": "0",
           "KERNELEVO_WEBHOOK_SECRET": "s3cret-value"}
    done = subprocess.run([sys.executable, "-m", "kernelevo.cli", "serve", "--port", "9"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "KERNELEVO_GITHUB_APP_ID: input should be a valid integer" in done.stderr and "'abc'" in done.stderr
    assert "KERNELEVO_BOT_WORKERS:" in done.stderr
    assert "s3cret-value" not in done.stderr + done.stdout
