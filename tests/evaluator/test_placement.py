"""A candidate's module lives, inside its sandbox, where the kernel will live in the user's repository."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

import pytest

from evaluator import EvalOptions, evaluate
from evaluator.placement import CandidatePlace, from_request, place_for
from evaluator.roles import policy
from kernelevo import sandbox
from kernelevo.kernel_store import kernel_module_name
from kernelevo.sandbox.launch import host_view_env, host_view_path

TASKS = Path(__file__).resolve().parent.parent / "tasks"


def test_a_kernelbench_file_gives_its_folder_and_name():
    place = place_for(TASKS / "axpy.py", "")
    assert place == CandidatePlace(repo="tasks", op="axpy")
    assert place.relative == PurePosixPath("tasks/kernels/axpy/kernel.py")


def test_a_generated_task_gives_the_repository_and_the_ops_kernel_folder():
    source = "from kernelevo.op_task import load_op\nModel = load_op('/srv/checkouts/My Repo', " \
             "'models/attn.py::Attention.forward')\n"
    assert place_for(Path("/tmp/t/task.py"), source) == CandidatePlace(repo="My-Repo", op="attention_forward")


@pytest.mark.parametrize("source", [
    "load_op('/', '../../etc::passwd')",  # not an op id: the task's own folder and name instead
    "load_op('/x/..', 'a.py::B')",
])
def test_names_from_a_tasks_text_never_leave_the_home(source):
    place = place_for(Path("/tmp/t/task.py"), source)
    assert ".." not in place.relative.parts and not place.relative.is_absolute()
    assert all(part not in ("", ".", "..") for part in place.relative.parts)


@pytest.mark.parametrize("value", [None, {}, {"repo": "..", "op": "x"}, {"repo": "a/b", "op": "x"},
                                   {"repo": "a", "op": "../x"}, {"repo": "a", "op": ""}, "a/b"])
def test_the_candidate_process_refuses_a_place_that_is_not_one_component_each(value):
    with pytest.raises(ValueError):
        from_request(value)


def test_inside_the_sandbox_the_process_works_in_the_repository_and_outside_it_in_the_private_home(tmp_path):
    view = policy("candidate", "cpu", tmp_path, workspace="tasks")
    assert view.cwd == Path(view.env["HOME"]) / "tasks" and (tmp_path / "home" / "tasks").is_dir()
    assert host_view_path(view, view.cwd) == (tmp_path / "home" / "tasks").resolve()
    assert host_view_env(view)["HOME"] == str((tmp_path / "home").resolve())
    assert host_view_path(view, Path("/usr/bin")) == Path("/usr/bin")


SEES = '''
import os
import torch.nn as nn

raise RuntimeError("file=" + __file__ + " cwd=" + os.getcwd() + " name=" + __name__)


class ModelNew(nn.Module):
    def forward(self, x):
        return x
'''


@pytest.mark.skipif(not sandbox.current().working, reason="needs bubblewrap (the path is the sandbox's view)")
def test_a_candidate_sees_the_layout_of_a_users_repository_not_the_verifiers_folder(tmp_path):
    candidate = tmp_path / "sees.py"
    candidate.write_text(SEES)
    verdict = evaluate(TASKS / "axpy.py", candidate, "cpu", EvalOptions(static_checks=False, seeds=1))
    assert verdict.reason == "compile_error", verdict.detail
    seen = re.search(r"file=(/\S+?)/tasks/kernels/axpy/kernel\.py cwd=(\S+) name=(\S+)",
                     verdict.detail)
    assert seen, verdict.detail
    home = seen.group(1)
    assert seen.group(2) == f"{home}/tasks" and seen.group(3) == kernel_module_name("axpy", SEES)
    assert "kernelevo-eval" not in verdict.detail


def test_the_parent_never_writes_a_candidate_through_a_link_in_the_processs_folder(tmp_path):
    from types import SimpleNamespace

    from evaluator.run_candidate import write_candidate
    from evaluator.verdict import EvalSetupError

    private, elsewhere = tmp_path / "w1", tmp_path / "users-repo"
    (private / "home").mkdir(parents=True)
    elsewhere.mkdir()
    (private / "home" / "tasks").symlink_to(elsewhere)  # planted by native code outside any sandbox
    session = SimpleNamespace(placement=CandidatePlace(repo="tasks", op="axpy"))
    with pytest.raises(EvalSetupError, match="a link inside"):
        write_candidate(session, SimpleNamespace(private=private), "# kernel\n")
    assert list(elsewhere.iterdir()) == []  # nothing created through the link
