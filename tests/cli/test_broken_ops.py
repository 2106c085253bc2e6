"""One broken op does not stop the others: ``kernelevo optimize`` reports it with the op, the file and the line
of the user's code, searches the rest, exits non-zero at the end and leaves no empty run directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelevo.cli_failures import closing_lines, describe_setup_error

ROOT = Path(__file__).parents[2]

OPS = '''import torch
import kernelevo


@kernelevo.optimize(
    inputs=lambda device: [(torch.randn(64, 128, device=device),)],
    small_inputs=lambda device: [(torch.randn(8, 128, device=devce),)],
)
def broken(x):
    return torch.relu(x) * 2.0


@kernelevo.optimize(
    inputs=lambda device: [(torch.randn(64, 128, device=device), torch.randn(128, device=device))],
    small_inputs=lambda device: [(torch.randn(9, 128, device=device), torch.randn(128, device=device))],
)
def bias_relu(x, b):
    return torch.relu(x + b)


@kernelevo.optimize(
    inputs=lambda device: [(torch.randn(64, 128, device=device), 1 / 0)],
    small_inputs=lambda device: [(torch.randn(8, 128, device=device), 2.0)],
)
def scale(x, s):
    return x * s
'''

UNIMPORTABLE = '''import torch
import kernelevo
import not_a_module_anywhere


@kernelevo.optimize(inputs=lambda device: [(torch.randn(8, device=device),)])
def double(x):
    return x * 2
'''


def kernelevo_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TRITON_INTERPRET", None)
    return subprocess.run([sys.executable, "-m", "kernelevo.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow
def test_broken_ops_are_reported_with_file_and_line_and_the_others_are_searched(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "ops.py").write_text(OPS)
    (repo / "other.py").write_text(UNIMPORTABLE)
    runs = tmp_path / "runs"
    done = kernelevo_cli("optimize", ".", "--device", "cpu", "--proposer", "offline", "--budget-candidates", "1",
                         "--json-lines", "--runs-dir", str(runs), cwd=repo)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr
    err = done.stderr
    assert "ops.py:7: ops.py::broken cannot be searched: small_inputs('cpu') raised NameError: name 'devce'" in err
    assert "other.py:3: other.py::double cannot be searched: importing other.py" in err
    assert "ModuleNotFoundError: No module named 'not_a_module_anywhere'" in err
    # inputs raises: reported although a CPU search judges small_inputs only (a GPU run would call inputs)
    assert "ops.py:22: ops.py::scale cannot be searched: inputs('cpu') raised ZeroDivisionError" in err
    assert "task.py" not in err and "(line " not in err  # nothing points into the generated task module
    assert ("3 of 4 op(s) could not be searched (see above): ops.py::broken, ops.py::scale, other.py::double."
            in err)
    assert "kernelevo optimize . --op ops.py::broken" in err
    events = [json.loads(line) for line in done.stdout.splitlines()]
    errors = [e for e in events if e["event"] == "error"]
    assert [(e["op_id"], e["file"], e["line"]) for e in errors] == [
        ("ops.py::broken", "ops.py", 7), ("ops.py::scale", "ops.py", 22), ("other.py::double", "other.py", 3)]
    [result] = [e for e in events if e["event"] == "result"]  # the good op, searched after the broken one
    assert result["op_id"] == "ops.py::bias_relu" and result["best"]["verdict"]["verdict"] == "accepted"
    assert [p.name for p in runs.iterdir()] == [Path(result["run_dir"]).name]  # no empty run directories


def test_a_task_file_failure_keeps_the_line_the_evaluator_named(tmp_path):
    failure = describe_setup_error("task.py::Model", "task", "tasks/softmax.py", 1, tmp_path,
                                   "/x/tasks/softmax.py: get_inputs() raised ValueError: bad (line 12)")
    assert (failure.file, failure.line) == ("tasks/softmax.py", 12)
    assert failure.headline().startswith("tasks/softmax.py:12: task.py::Model cannot be searched: ")


def test_a_decorated_op_without_frames_in_its_file_points_at_its_def(tmp_path):
    failure = describe_setup_error("m.py::f", "function", "m.py", 9, tmp_path,
                                   "/run/task.py: get_cases() raised OpLoadError: m.py::f: tolerance= must be a number")
    assert (failure.line, failure.message) == (9, "tolerance= must be a number")


def test_closing_lines_quote_what_the_shell_would_split():
    failure = describe_setup_error("my ops.py::f", "function", "my ops.py", 3, Path("/r"), "boom")
    lines = closing_lines([failure], 2, "my ops.py")
    assert lines[0] == "1 of 2 op(s) could not be searched (see above): my ops.py::f."
    assert lines[1].endswith("kernelevo optimize 'my ops.py' --op 'my ops.py::f'")
    assert closing_lines([], 2, None) == []
