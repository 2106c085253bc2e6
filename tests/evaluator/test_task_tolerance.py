"""A task's own TOLERANCE: finite bounds >= 0 are taken as given; anything else is refused on load with the task's
file and the bound named (an infinite bound would switch the check off and could not be recorded in a verdict).
The task loader runs in the tests' own process here: these tasks are the tests' own files."""

from __future__ import annotations

import pytest

from evaluator.sandboxed import taskspec

TASK = '''
import torch
from torch import nn

TOLERANCE = {tolerance}

class Model(nn.Module):
    def forward(self, x):
        return x * 2

def get_inputs():
    return [torch.randn(8)]

def get_init_inputs():
    return []
'''


def _load(tmp_path, tolerance: str) -> taskspec.LoadedTask:
    path = tmp_path / "double.py"
    path.write_text(TASK.format(tolerance=tolerance))
    return taskspec.load_task(path)


def test_finite_bounds_are_taken_as_floats(tmp_path):
    assert _load(tmp_path, '{"atol": 1, "rtol": 1e-3, "rel": 0.0}').tolerance == {"atol": 1.0, "rtol": 1e-3, "rel": 0.0}


@pytest.mark.parametrize("bad", ['{"rel": float("inf")}', '{"atol": float("nan")}', '{"rtol": -1e-3}',
                                 '{"atol": "1e-2"}', '{"atol": True}'])
def test_a_bound_that_is_not_a_finite_number_at_least_zero_is_refused_by_name(tmp_path, bad):
    with pytest.raises(taskspec.TaskError, match=r"double\.py: TOLERANCE\['(atol|rtol|rel)'\] = .*finite number >= 0"):
        _load(tmp_path, bad)


def test_unknown_keys_are_still_named(tmp_path):
    with pytest.raises(taskspec.TaskError, match="unknown keys"):
        _load(tmp_path, '{"abs": 1e-3}')
