"""Generated inputs are drawn once per seed and handed out as fresh copies (the reference asks again and again)."""

from __future__ import annotations

from pathlib import Path

import torch

from evaluator.sandboxed import taskspec

TASK = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x, xt, bias, scale):
        return x + xt.t() + bias * scale

def get_inputs():
    x = torch.randn(8, 4)
    return [x, x.t(), torch.randn(4).expand(8, 4), 2.0]

def get_init_inputs():
    return []
'''


def _task(tmp_path: Path) -> taskspec.LoadedTask:
    path = tmp_path / "aliased_task.py"
    path.write_text(TASK)
    return taskspec.load_task(path)


def test_a_repeat_gives_the_same_values_and_generator_state_as_drawing_again(tmp_path):
    task = _task(tmp_path)
    first = taskspec.generate_cases(task, True, 7, "signed")
    after_first = torch.rand(3)
    taskspec._generated.clear()
    drawn_again = taskspec.generate_cases(task, True, 7, "signed")
    after_drawn = torch.rand(3)
    repeat = taskspec.generate_cases(task, True, 7, "signed")
    after_repeat = torch.rand(3)
    for a, b, c in zip(first, drawn_again, repeat):
        assert all(torch.equal(x, y) and torch.equal(x, z) for x, y, z in zip(a[:3], b[:3], c[:3]))
    assert torch.equal(after_first, after_drawn) and torch.equal(after_first, after_repeat)


def test_every_caller_gets_its_own_copy_with_the_layout_as_drawn(tmp_path):
    task = _task(tmp_path)
    (x, xt, bias, scale), = taskspec.generate_cases(task, True, 3, "task")[:1]
    x.add_(100.0)  # an op that updates its inputs in place (an optimizer step) must not change the next caller's
    (x2, xt2, bias2, _), = taskspec.generate_cases(task, True, 3, "task")[:1]
    assert not torch.equal(x, x2) and torch.equal(xt2, x2.t())
    assert xt2.untyped_storage().data_ptr() == x2.untyped_storage().data_ptr()  # still one tensor and its view
    assert bias2.stride() == (0, 1) and scale == 2.0  # a broadcast input stays one


def test_the_kept_draws_are_bounded(tmp_path, monkeypatch):
    task = _task(tmp_path)
    monkeypatch.setattr(taskspec, "GENERATED_KEPT_BYTES", 1)
    taskspec._generated.clear()
    for seed in range(5):
        taskspec.generate_cases(task, True, seed, "task")
    assert len(taskspec._generated) == 1


def test_one_case_alone_is_that_case_of_all_of_them(tmp_path):
    task = _task(tmp_path)
    every = taskspec.generate_cases(task, True, 11, "wide")
    alone = taskspec.generate_case(task, True, 11, "wide", 0)
    assert all(torch.equal(a, b) for a, b in zip(alone[:3], every[0][:3])) and alone[3] == every[0][3]
