"""`kernelevo verify` on a small repo with a Triton kernel (checked by the real verifier, on CPU through
the Triton interpreter), staleness, and the op -> task path with its error messages."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from kernelevo.commands import discover_cmd, verify_cmd
from kernelevo.discovery import discover
from kernelevo.kernel_store import envelope_from_cases, read_kernel, write_kernel
from kernelevo.op_task import OpLoadError, load_op, task_source, write_task

FIXTURE = Path(__file__).parents[1] / "fixtures" / "repos" / "verify"
OP_ID = "ops/scale.py::scale_shift"


def _cli():
    app = typer.Typer()
    verify_cmd.register(app)
    discover_cmd.register(app)
    return app


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    return root


def _accept(root: Path, kernel_file: str = "kernel_ok.py", op_id: str = OP_ID) -> Path:
    """Store a kernel the way the bot does after a search (envelope from the small CPU cases)."""
    import torch

    (op,) = [op for op in discover(root).ops if op.op_id == op_id]
    cases = [(torch.randn(4, 37),), (torch.randn(3, 64),)]
    envelope = envelope_from_cases(cases, device_type="cpu", capabilities=None, backend="triton")
    return write_kernel(root, op, (root / kernel_file).read_text(), {"verdict": "accepted", "reason": "ok"},
                        envelope)


def test_stale_and_missing_ops_fail_without_running_the_verifier(repo):
    directory = _accept(repo)
    source = repo / "ops" / "scale.py"
    source.write_text(source.read_text().replace("x * 2.0 + 1.0", "x * 2.0 + 2.0"))
    result = CliRunner().invoke(_cli(), ["verify", str(repo), "--json"])
    assert result.exit_code == 1, result.output
    (entry,) = json.loads(result.output)["kernels"]
    assert entry["status"] == "stale" and entry["op_id"] == OP_ID and entry["verdict"] is None
    source.write_text(source.read_text().replace("def scale_shift", "def renamed"))
    assert verify_cmd.verify_kernel(read_kernel(directory), "cpu").status == "missing_op"
    source.unlink()
    assert verify_cmd.verify_kernel(read_kernel(directory), "cpu").status == "missing_op"


def test_no_kernels_is_success_and_unreadable_ones_fail(repo):
    runner = CliRunner()
    assert runner.invoke(_cli(), ["verify", str(repo)]).exit_code == 0
    (repo / "kernels" / "junk").mkdir(parents=True)
    result = runner.invoke(_cli(), ["verify", str(repo), "--json"])
    assert result.exit_code == 1 and "manifest.json: missing" in result.output
    assert runner.invoke(_cli(), ["verify", str(repo), "--device", "tpu"]).exit_code == 2


def test_verify_rejects_a_wrong_kernel(repo):
    _accept(repo, "kernel_wrong.py")
    result = CliRunner().invoke(_cli(), ["verify", str(repo), "--device", "cpu", "--json"])
    assert result.exit_code == 1, result.output
    (entry,) = json.loads(result.output)["kernels"]
    assert entry["status"] == "rejected" and entry["verdict"]["reason"] == "incorrect", entry["message"]


def test_generated_pytest_verifies_good_function_and_module_kernels(repo):
    _accept(repo, "kernel_module.py", "ops/layers.py::ColumnScale")
    directory = _accept(repo)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(directory.parent)],
                          cwd=repo, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "2 passed" in proc.stdout


# ------------------------------------------------------------------------------ op -> task


def test_task_source_names_the_op_and_imports_nothing(repo):
    text = task_source(repo, OP_ID)
    assert OP_ID in text and "load_op(" in text
    compile(text, "task.py", "exec")
    with pytest.raises(ValueError, match="not an op id"):
        task_source(repo, "ops/scale.py")


def test_loaded_op_is_a_kernelbench_model(repo, monkeypatch):
    import torch

    monkeypatch.syspath_prepend(str(repo))
    loaded = load_op(repo, OP_ID)
    cases = loaded.cases("cpu", small=True)
    assert [tuple(c[0].shape) for c in cases] == [(4, 37), (3, 64)]
    x = cases[0][0]
    assert torch.equal(loaded.model(*loaded.init_inputs())(x), x * 2.0 + 1.0)
    task = write_task(repo, OP_ID, repo / "generated" / "task.py")
    assert task.is_file()


def _broken_op(repo: Path, body: str) -> str:
    (repo / "ops" / "bad.py").write_text(
        "import torch\nimport kernelevo\n\n" + body + "\ndef bad(x):\n    return x\n"
    )
    for name in [m for m in sys.modules if m == "ops" or m.startswith("ops.")]:
        del sys.modules[name]
    return "ops/bad.py::bad"


@pytest.mark.parametrize(
    "body, words",
    [
        ("import not_installed_anywhere\n@kernelevo.optimize(inputs=lambda d: [])",
         "importing ops/bad.py as ops.bad failed: ModuleNotFoundError"),
        ("@kernelevo.optimize(inputs=lambda d: 1 / 0)", r"inputs\('cpu'\) raised ZeroDivisionError"),
        ("@kernelevo.optimize(inputs=lambda d: torch.ones(2))", "must return a non-empty list"),
        ("@kernelevo.optimize(inputs=lambda d: [])", "must return a non-empty list"),
        ("@kernelevo.optimize(inputs=lambda d: [torch.ones(2)])", r"case 0 is a tensor.*\[\(x,\)\]"),
        ("@kernelevo.optimize(inputs=lambda d: [([1, 2],)])", "argument 0 is a list"),
        ("@kernelevo.optimize(inputs=lambda d: [(torch.ones(2, device='meta'),)])",
         "argument 0 is on meta, expected cpu: create tensors with device=device"),
        ("def undecorated_marker(): pass\n", "not decorated with @kernelevo.optimize"),
    ],
)
def test_op_loading_errors_say_what_to_fix(repo, monkeypatch, body, words):
    monkeypatch.syspath_prepend(str(repo))
    op = _broken_op(repo, body)
    with pytest.raises(OpLoadError, match=words):
        load_op(repo, op).cases("cpu")
    with pytest.raises(OpLoadError, match="has no missing"):
        load_op(repo, "ops/scale.py::missing")


def test_module_ops_become_tasks_with_their_constructor_arguments(monkeypatch):
    import torch

    tricky = Path(__file__).parents[1] / "fixtures" / "repos" / "tricky"
    monkeypatch.syspath_prepend(str(tricky))
    for name in [m for m in sys.modules if m == "pkg" or m.startswith("pkg.")]:
        monkeypatch.delitem(sys.modules, name)
    loaded = load_op(tricky, "pkg/ops.py::Outer.Block")
    assert loaded.kind == "module" and loaded.init_inputs() == [64]
    model = loaded.model(*loaded.init_inputs())
    (x,) = loaded.cases("cpu")[0]
    assert torch.equal(model(x), x)  # the reference is the original forward (weights are ones)
    with pytest.raises(OpLoadError, match="methods cannot be evaluated"):
        load_op(tricky, "pkg/ops.py::Outer.Inner.method")
    with pytest.raises(OpLoadError, match="inside functions"):
        load_op(tricky, "pkg/ops.py::factory.<locals>.local_op")
    scale_rows = load_op(tricky, "pkg/ops.py::scale_rows")
    assert scale_rows.tolerance() == {"atol": 1e-3, "rtol": 1e-3}
    import inspect

    assert list(inspect.signature(scale_rows.model.forward).parameters) == ["self", "x", "w"]


@pytest.mark.gpu
def test_verify_on_cuda_times_the_scored_cases(repo):
    _accept(repo)
    result = CliRunner().invoke(_cli(), ["verify", str(repo), "--device", "cuda", "--json"])
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.output)["kernels"]
    assert entry["status"] == "ok" and entry["verdict"]["device"].startswith("cuda")
    assert entry["verdict"]["timing"]["cases"], entry["verdict"]["timing"]


def test_task_file_kernels_are_stale_when_any_part_of_the_task_changes(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "repos" / "tricky", root)
    (task,) = [op for op in discover(root).ops if op.kind == "task"]
    directory = write_kernel(root, task, "class ModelNew: ...\n", {"verdict": "accepted"}, {"args": []})
    assert directory.name == "softmax_task"
    assert verify_cmd.check_staleness(read_kernel(directory)) is None
    path = root / "tasks" / "softmax_task.py"
    path.write_text(path.read_text().replace("torch.randn(2, 1000)", "torch.randn(2, 999)"))  # inputs only
    stale = verify_cmd.check_staleness(read_kernel(directory))
    assert stale is not None and stale.status == "stale"
