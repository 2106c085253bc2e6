"""`kernelevo eval` on bad input: a clear message, exit 1 for the candidate's fault, 2 for the task's."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

TASKS = Path(__file__).resolve().parent.parent / "tasks"
HONEST = Path(__file__).resolve().parent.parent / "candidates" / "honest"


def run_eval(task, candidate, *extra):
    cmd = [sys.executable, "-m", "kernelevo.cli", "eval", "--task", str(task), "--candidate", str(candidate),
           "--device", "cpu", "--seeds", "2", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


@pytest.fixture()
def write(tmp_path):
    def _write(name, text):
        path = tmp_path / name
        path.write_text(text)
        return path
    return _write


def test_json_contract_on_an_honest_candidate():
    proc = run_eval(TASKS / "softmax.py", HONEST / "softmax_rowwise.py", "--json")
    verdict = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert verdict["verdict"] == "accepted" and verdict["reason"] == "ok"
    assert verdict["timing"] is None and "not timed" in verdict["timing_note"]
    checks = [c for case in verdict["correctness"]["cases"] for c in case["checks"]]
    assert checks and all(c["ok"] and c["max_abs_err"] is not None for c in checks)
    assert isinstance(verdict["correctness"]["seeds"], int) and "\"seed\"" not in json.dumps(checks)  # secret
    assert verdict["environment"]["torch"]


def test_readable_summary_without_json():
    proc = run_eval(TASKS / "softmax.py", HONEST / "softmax_rowwise.py")
    assert proc.returncode == 0
    assert proc.stdout.startswith("ACCEPTED") and "not timed" in proc.stdout


def test_missing_model_new_is_rejected_with_advice(write):
    cand = write("no_entry.py", "import torch\nclass Something(torch.nn.Module):\n    pass\n")
    proc = run_eval(TASKS / "softmax.py", cand, "--json")
    verdict = json.loads(proc.stdout)
    assert proc.returncode == 1 and verdict["verdict"] == "rejected"
    assert "ModelNew" in verdict["detail"]


def test_syntax_error_names_the_line(write):
    cand = write("broken.py", "import torch\n\nclass ModelNew(torch.nn.Module:\n    pass\n")
    proc = run_eval(TASKS / "softmax.py", cand, "--json")
    verdict = json.loads(proc.stdout)
    assert proc.returncode == 1 and verdict["reason"] == "compile_error"
    assert ":3" in verdict["detail"]


def test_wrong_forward_signature(write):
    source = (HONEST / "softmax_rowwise.py").read_text().replace("def forward(self, x", "def forward(self, x, y")
    cand = write("wrong_sig.py", source)
    proc = run_eval(TASKS / "softmax.py", cand, "--json")
    verdict = json.loads(proc.stdout)
    assert proc.returncode == 1 and verdict["reason"] == "compile_error"
    assert "forward" in verdict["detail"] and "x" in verdict["detail"]


def test_task_raising_on_import_exits_2_naming_the_file(write):
    task = write("bad_task.py", "import torch\nraise ValueError('no config found')\n")
    proc = run_eval(task, HONEST / "softmax_rowwise.py")
    assert proc.returncode == 2
    assert "bad_task.py" in proc.stderr and "no config found" in proc.stderr and "line 2" in proc.stderr


def test_task_without_kernelbench_functions_exits_2(write):
    task = write("not_a_task.py", "import torch\nclass Model(torch.nn.Module):\n    pass\n")
    proc = run_eval(task, HONEST / "softmax_rowwise.py")
    assert proc.returncode == 2 and "get_inputs" in proc.stderr


def test_missing_files_exit_2(tmp_path):
    proc = run_eval(tmp_path / "nope.py", HONEST / "softmax_rowwise.py")
    assert proc.returncode == 2 and "not found" in proc.stderr


def test_cuda_requested_without_a_gpu_exits_2_with_advice():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    cmd = [sys.executable, "-m", "kernelevo.cli", "eval", "--task", str(TASKS / "axpy.py"), "--candidate",
           str(HONEST / "axpy_launcher.py"), "--device", "cuda"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert "no usable CUDA device" in proc.stderr and "--device cpu" in proc.stderr


def test_cuda_candidate_on_cpu_is_compile_checked(write):
    """CI has no GPU: a kernelevo.cuda candidate is compiled with NVRTC; a compile error is a rejection with
    the CUDA line, a clean compile is reported as needing a GPU (exit 2), never as accepted."""
    good = HONEST / "axpy_cuda.py"
    proc = run_eval(TASKS / "axpy.py", good)
    assert proc.returncode == 2 and "compile (NVRTC)" in proc.stderr and "--device cuda" in proc.stderr
    broken = write("broken_cuda.py", good.read_text().replace("out[i] = alpha", "out[i] = undefined_symbol * alpha", 1))
    assert "undefined_symbol" in broken.read_text()
    proc = run_eval(TASKS / "axpy.py", broken, "--json")
    verdict = json.loads(proc.stdout)
    assert proc.returncode == 1 and verdict["reason"] == "compile_error" and "CUDA compile failed" in verdict["detail"]


def test_load_inline_candidate_on_cpu_needs_a_gpu():
    proc = run_eval(TASKS / "softmax.py", HONEST / "softmax_load_inline.py")
    assert proc.returncode == 2 and "load_inline" in proc.stderr and "--device cuda" in proc.stderr
