"""What the input distributions do beyond scaling values (evaluator/sandboxed/taskspec.apply_distribution): masks
are shuffled within rows (a kernel that assumes the mask's shape fails), and `wide` rows include zero rows, a
spike and a run of ties at secret positions (an eps dropped, a maximum over part of a row, a fast path keyed on
ties); integers keep their draw."""

from __future__ import annotations

import pytest
import torch

from evaluator.sandboxed.taskspec import DEFAULT_DISTRIBUTIONS, apply_distribution

CAUSAL = torch.ones(16, 16, dtype=torch.bool).triu(1)[None, None]


@pytest.mark.parametrize("distribution", DEFAULT_DISTRIBUTIONS)
def test_a_mask_keeps_its_count_per_row(distribution):
    out = apply_distribution(CAUSAL, distribution, seed=11)
    assert out.shape == CAUSAL.shape and out.dtype == torch.bool
    assert torch.equal(out.sum(-1), CAUSAL.sum(-1))


def test_some_distributions_change_the_mask_s_shape_and_the_task_s_own_draw_stays():
    changed = [d for d in DEFAULT_DISTRIBUTIONS if not torch.equal(apply_distribution(CAUSAL, d, seed=3), CAUSAL)]
    assert "task" not in changed and len(changed) >= 2
    assert not torch.equal(apply_distribution(CAUSAL, "signed", seed=3), apply_distribution(CAUSAL, "signed", seed=4))


def test_a_broadcast_mask_stays_broadcast():
    mask = (torch.rand(1, 12) > 0.5).expand(6, 12)
    out = apply_distribution(mask, "signed", seed=5)
    assert out.stride() == mask.stride() and torch.equal(out.sum(-1), mask.sum(-1))


def test_integers_keep_their_draw():
    targets = torch.randint(0, 100, (64,))
    for distribution in DEFAULT_DISTRIBUTIONS:
        assert torch.equal(apply_distribution(targets, distribution, seed=9), targets)


def test_wide_rows_have_zero_rows_spikes_and_ties():
    x = torch.randn(200, 64)
    out = apply_distribution(x, "wide", seed=21).double()
    zero_rows = (out.abs().sum(-1) == 0).sum().item()
    ratio = out.abs().amax(-1) / out.abs().median(-1).values.clamp_min(1e-12)
    ties = (out[:, 1] == out[:, 0]) & (out[:, 0] != 0)
    assert zero_rows >= 1 and (ratio > 100).any() and ties.any()
    again = apply_distribution(x, "wide", seed=22).double()
    assert not torch.equal((out.abs().sum(-1) == 0), (again.abs().sum(-1) == 0))  # positions follow the secret seed


def test_small_inputs_and_vectors_are_left_to_the_values_alone():
    vector = torch.randn(100)
    assert (apply_distribution(vector, "wide", seed=1) != 0).any()
    few = torch.randn(4, 32)
    assert not (apply_distribution(few, "wide", seed=1).abs().sum(-1) == 0).all()
