"""KEEP_INPUTS: inputs whose structure the op relies on keep the task's own draw under every input distribution
(a rotary table is cat(freqs, freqs); a kernel reading one half of it is right), while the others still cover the
op's domain. The task loader runs in the tests' own process here: these tasks are the tests' own files."""

from __future__ import annotations

import textwrap

import pytest
import torch

from evaluator.sandboxed import taskspec

TASK = textwrap.dedent('''
    import torch
    from torch import nn

    KEEP_INPUTS = {keep}

    class Model(nn.Module):
        def forward(self, x, cos, sin):
            return x * cos + x.flip(-1) * sin

    def _case():
        freqs = torch.outer(torch.arange(5).float(), torch.arange(4).float())
        emb = torch.cat((freqs, freqs), dim=-1)
        return [torch.randn(5, 8), emb.cos(), emb.sin()]

    def get_init_inputs():
        return []

    def get_inputs():
        return _case()
''')


def _task(tmp_path, keep: str) -> taskspec.LoadedTask:
    path = tmp_path / "rope_task.py"
    path.write_text(TASK.format(keep=keep))
    return taskspec.load_task(path)


@pytest.mark.parametrize("keep", ['("cos", "sin")', "(1, 2)"])
def test_kept_inputs_keep_their_structure_under_every_distribution(tmp_path, keep):
    task = _task(tmp_path, keep)
    own = taskspec.generate_cases(task, False, 3, "task")[0]
    for distribution in taskspec.DISTRIBUTIONS - {"task"}:
        (x, cos, sin), = taskspec.generate_cases(task, False, 3, distribution)
        assert torch.equal(cos, own[1]) and torch.equal(sin, own[2]), distribution
        assert torch.equal(cos[:, :4], cos[:, 4:])  # cat(freqs, freqs): the halves agree
        assert not torch.equal(x, own[0]), distribution  # the rest still covers the domain


def test_without_keep_inputs_every_float_input_is_reshaped(tmp_path):
    task = _task(tmp_path, "()")
    own = taskspec.generate_cases(task, False, 3, "task")[0]
    (_, cos, _), = taskspec.generate_cases(task, False, 3, "shifted")
    assert not torch.equal(cos, own[1])


@pytest.mark.parametrize(("keep", "message"), [
    ('("cos", "tan")', "KEEP_INPUTS names 'tan', which is not an argument of Model.forward (x, cos, sin)"),
    ("(-1,)", "KEEP_INPUTS position -1 is negative"),
    ("(1.5,)", "KEEP_INPUTS entries are forward argument names or positions, got 1.5"),
])
def test_a_bad_keep_inputs_names_the_task_and_what_to_write(tmp_path, keep, message):
    with pytest.raises(taskspec.TaskError, match="rope_task.py") as raised:
        _task(tmp_path, keep)
    assert message in str(raised.value)


def test_a_kept_input_that_never_changes_with_the_seed_is_refused(tmp_path):
    """A table that is the same bytes for every seed lets a kernel ignore it and compute its values itself."""
    task = _task(tmp_path, '("cos", "sin")')
    with pytest.raises(taskspec.TaskError, match="KEEP_INPUTS input 'cos' is the same for every seed"):
        taskspec.check_kept_inputs_vary(task, False, [1, 2])
    seeded = tmp_path / "seeded.py"
    seeded.write_text(TASK.format(keep='("cos", "sin")').replace(
        "torch.arange(5).float()", "torch.arange(5).float() + int(torch.randint(0, 8192, ()))"))
    taskspec.check_kept_inputs_vary(taskspec.load_task(seeded), False, [1, 2])  # positions from the seed: fine
