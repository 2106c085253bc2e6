"""A task's text names the folders its sandboxes may read (``load_op('<root>', ...)``); a KernelBench file from a
PR is used as is, so a root is bound only inside the task's own folder or a repository this process generated a
task for. Before, ``load_op('/', ...)`` or another job's checkout gave the task's sandbox that folder."""

from __future__ import annotations

import pytest

from evaluator import EvalSetupError, EvaluationSession, roles
from kernelevo.op_task import write_task
from kernelevo.sandbox.policy import task_root_allowed

TASK = """
import torch
from torch import nn
from kernelevo.op_task import load_op

_op = load_op({root!r}, "ops.py::scale")


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.randn(4)]


def get_init_inputs():
    return []
"""


def test_a_task_naming_a_folder_outside_its_own_is_refused_with_what_to_do(tmp_path):
    other = tmp_path / "another-jobs-checkout"
    other.mkdir()
    (other / "ops.py").write_text("SECRET = 1\n")
    mine = tmp_path / "pr" / "tasks"
    mine.mkdir(parents=True)
    for root in (other, tmp_path, "/"):
        task = mine / "task.py"
        task.write_text(TASK.format(root=str(root)))
        assert roles.task_source_roots(task.read_text(), mine) == []
        assert roles.task_read_roots(task) == [mine.resolve()]
        with pytest.raises(EvalSetupError, match="outside the task's folder"):
            EvaluationSession(task, device="cpu")


def test_roots_inside_the_task_folder_and_generated_tasks_repositories_are_bound(tmp_path):
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "ops.py").write_text("def scale(x):\n    return x * 2\n")
    inside = repo / "pkg"
    task = repo / "task.py"
    task.write_text(TASK.format(root=str(inside)))
    assert roles.task_source_roots(task.read_text(), repo) == [inside.resolve()]
    assert not task_root_allowed(repo, tmp_path / "elsewhere")
    generated = write_task(repo, "ops.py::scale", tmp_path / "run" / "task.py")  # vouches for the repository
    assert task_root_allowed(repo, generated.parent)
    assert repo.resolve() in roles.task_read_roots(generated)
    assert not task_root_allowed("/", generated.parent)
