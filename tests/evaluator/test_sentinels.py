"""Sentinel values in integer inputs: which values are tried, where they go, and which the reference keeps (only
values the op accepts and means something by: cross entropy's ignore_index, not a wrapped negative index)."""

import re
import textwrap

import pytest
import torch
from torch import nn

from evaluator.sandboxed import sentinels
from evaluator.sandboxed.reference import ReferenceRunner


def test_candidates_are_values_named_for_what_they_mean():
    source = textwrap.dedent("""
        import torch.nn as nn
        PAD_ID = 3
        N_CLASSES = 10
        loss = nn.CrossEntropyLoss(ignore_index=255)
        def f(x, padding_idx=-7, *, blank: int = 11, width=-5):
            return x
    """)
    model = nn.Sequential(nn.Embedding(10, 4, padding_idx=2))
    found = sentinels.candidates(source, model, [-100])
    assert found[0] == -100 and {3, 255, -7, 11, 2} <= set(found)
    assert 10 not in found and -5 not in found  # a size, a width: nothing says they are special
    assert sentinels.candidates("def broken(:", None) == ()


def test_the_ops_a_forward_runs_name_their_special_arguments():
    called: list[int] = []
    logits, target = torch.randn(4, 7), torch.tensor([1, 2, 3, 4])
    out = sentinels.answers(_Loss(), [logits, target], record=called)
    assert sorted(called) == [-100, 0]  # nll_loss_forward's ignore_index, embedding's padding_idx
    assert out is not None and torch.equal(target, torch.tensor([1, 2, 3, 4]))
    assert sentinels.answers(_Loss(), [logits, torch.tensor([1, 2, 3, 99])]) is None  # it raises: None


class _Loss(nn.Module):
    def forward(self, logits, target):
        rows = torch.nn.functional.embedding(target, torch.randn(8, 2), padding_idx=0)
        return torch.nn.functional.cross_entropy(logits, target), rows


def test_positions_are_a_share_never_all_and_the_seeds_own():
    for numel in (2, 13, 1000):
        for share in sentinels.SHARES:
            where = sentinels.positions(numel, seed=5, case=0, index=1, share=share)
            assert 1 <= len(where) < numel and len(set(where.tolist())) == len(where)
            assert len(where) == max(1, min(numel - 1, int(numel * share)))
            assert torch.equal(where, sentinels.positions(numel, 5, 0, 1, share))
    assert not torch.equal(sentinels.positions(1000, 5, 0, 1, 0.4), sentinels.positions(1000, 6, 0, 1, 0.4))
    target = torch.arange(40)
    marked = sentinels.marked(target, -100, 5, 0, 1, 0.15)
    where = sentinels.positions(40, 5, 0, 1, 0.15)
    assert torch.equal(marked == -100, torch.zeros(40, dtype=torch.bool).index_fill(0, where, True))
    assert torch.equal(target, torch.arange(40))  # a copy
    assert not sentinels.markable(torch.zeros(4, dtype=torch.bool)) and not sentinels.markable(torch.zeros(4))
    assert not sentinels.markable(torch.arange(12).reshape(3, 4).t()) and not sentinels.markable(torch.tensor([1]))
    assert not sentinels.fits(torch.arange(4, dtype=torch.uint8), -1)
    assert not sentinels.fits(torch.tensor([0, -1]), -1)  # drawn already: checked anyway


def test_aliases_are_in_range_values_a_negative_index_may_stand_for():
    idx = torch.randint(0, 50, (8, 3), generator=torch.Generator().manual_seed(0))
    table = torch.randn(50, 4)
    assert sentinels.aliases(-1, [table, idx]) == [2, 3, 7, 49]  # the last of each size
    assert sentinels.aliases(-100, [table, idx]) == []


_TASK = '''
import torch
import torch.nn.functional as F
from torch import nn

INPUT_DISTRIBUTIONS = ("wide",)
{extra}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.randn(50, 8))

    def forward(self, x, idx):
        return {body}


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(13, 300), torch.randint(0, {high}, (13,))]
'''


def _labelled(plan, dists, value, name, first=0):
    """The plan's distributions from ``first`` on are ``dists``, each naming ``value`` at a share of input ``name``."""
    shares = "|".join(f"{share:.0%}" for share in sentinels.SHARES)
    labels = plan["distributions"][first:]
    return len(labels) == len(dists) and all(
        re.fullmatch(rf"{d} \({value} at ({shares}) of {name}\)", label) for d, label in zip(dists, labels))


def _load(tmp_path, body, high=300, extra=""):
    path = tmp_path / "task.py"
    path.write_text(_TASK.format(body=body, high=high, extra=extra))
    runner = ReferenceRunner(tmp_path / "private", "cpu")
    plan = runner.load({"task": str(path), "small": True, "seeds": [11], "init_seed": 5,
                        "inputs_dir": str(tmp_path / "inputs")}, [])
    [entry] = plan["inputs"]
    return runner, plan, torch.load(entry["file"], weights_only=True)


def test_cross_entropy_targets_hold_ignore_index_and_the_reference_ignores_them(tmp_path):
    runner, plan, (x, idx) = _load(tmp_path, "F.cross_entropy(x, idx)")
    assert _labelled(plan, ["wide"], "-100", "idx")
    assert 1 <= int((idx == -100).sum()) < len(idx)
    refs, _tolerances = runner.reference(0, 11)
    keep = idx != -100
    expected = F_cross_entropy(x[keep].double(), idx[keep])
    assert torch.allclose(refs[0], expected, rtol=0, atol=1e-12)


def F_cross_entropy(logits, target):
    return torch.nn.functional.cross_entropy(logits, target)


def test_every_distribution_but_the_tasks_own_marks(tmp_path):
    path = tmp_path / "task.py"
    path.write_text(_TASK.format(body="F.cross_entropy(x, idx)", high=300, extra="").replace(
        'INPUT_DISTRIBUTIONS = ("wide",)', 'INPUT_DISTRIBUTIONS = ("task", "signed", "shifted")'))
    runner = ReferenceRunner(tmp_path / "private", "cpu")
    plan = runner.load({"task": str(path), "small": True, "seeds": [11, 12, 13], "init_seed": 5,
                        "inputs_dir": str(tmp_path / "inputs")}, [])
    assert plan["distributions"][0] == "task" and _labelled(plan, ["signed", "shifted"], "-100", "idx", first=1)
    # the marked seeds take the shares in turn
    assert len({label.split(" at ")[1] for label in plan["distributions"][1:]}) == 2


def test_a_task_that_names_its_own_ignore_index_gets_that_value(tmp_path):
    _runner, plan, (_x, idx) = _load(tmp_path, "F.cross_entropy(x, idx, ignore_index=255)")
    assert _labelled(plan, ["wide"], "255", "idx")
    assert int((idx == 255).sum()) >= 1


@pytest.mark.parametrize("body,extra", [
    ("self.table[idx] * x[:, :1]", "PAD_INDEX = -1"),  # named, but -1 counts from the end: row 49's answers
    ("F.embedding(idx, self.table, padding_idx=3) * x[:, :1]", ""),  # 3 is drawn already (checked anyway)
    ("F.embedding(idx, self.table) * x[:, :1]", "PAD_INDEX = -1"),  # the op refuses -1
    ("x * idx[:, None]", ""),  # an integer as data: nothing names a value special
])
def test_no_sentinel_where_no_value_means_something_of_its_own(tmp_path, body, extra):
    _runner, plan, (_x, idx) = _load(tmp_path, body, high=50, extra=extra)
    assert plan["distributions"] == ["wide"]
    assert int(idx.min()) >= 0


def test_scored_cases_take_the_value_decided_on_the_small_cases(tmp_path):
    """On a GPU the scored cases are large: the value is decided on the task's small cases (on the CPU), then marked in
    every scored case that does not draw it."""
    path = tmp_path / "task.py"
    path.write_text(_TASK.format(body="F.cross_entropy(x, idx)", high=300, extra="") + textwrap.dedent('''

        def get_cases():
            return [[torch.randn(n, 300), torch.randint(0, 300, (n,))] for n in (64, 40)]


        def get_small_cases():
            return [[torch.randn(5, 300), torch.randint(0, 300, (5,))]]
    '''))
    runner = ReferenceRunner(tmp_path / "private", "cpu")
    plan = runner.load({"task": str(path), "small": False, "seeds": [11], "init_seed": 5,
                        "inputs_dir": str(tmp_path / "inputs")}, [])
    assert _labelled(plan, ["wide"], "-100", "idx")
    for entry in plan["inputs"]:
        _x, idx = torch.load(entry["file"], weights_only=True)
        assert len(idx) in (64, 40) and 1 <= int((idx == -100).sum()) < len(idx)
