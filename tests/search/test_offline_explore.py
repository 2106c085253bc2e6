"""Fresh requests keep exploring after every strategy's defaults: seeded variants, reproducible."""

from __future__ import annotations

from kernelevo.search.offline import OfflineProposer
from kernelevo.search.offline.proposer import FRESH_VARIANTS, fresh_cell
from kernelevo.search.offline.tune import find_knobs
from kernelevo.search.proposer import ProposalRequest

TASK = '''import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(8, 300)]


def get_init_inputs():
    return []
'''


def test_fresh_cells_walk_the_defaults_then_their_variants():
    n = 3
    assert [fresh_cell(n, seed, 0) for seed in range(n)] == [(0, 0), (1, 0), (2, 0)]
    assert [fresh_cell(n, 0, i) for i in range(n, 2 * n)] == [(0, 1), (1, 1), (2, 1)]
    period = n * (1 + FRESH_VARIANTS)
    assert fresh_cell(n, 12345, 0) == fresh_cell(n, 12345 + period, 0)
    assert {fresh_cell(n, seed, 0)[1] for seed in range(period)} == set(range(1 + FRESH_VARIANTS))


def test_fresh_requests_beyond_the_defaults_are_new_feasible_variants():
    proposer = OfflineProposer()
    cells = proposer.strategies(TASK)
    n = len(cells)
    defaults = {p.source for seed in range(n) for p in proposer.propose(ProposalRequest("sm", TASK, seed=seed))}
    assert len(defaults) == n
    variants = []
    for seed in range(n, 4 * n * (1 + FRESH_VARIANTS)):
        [p] = proposer.propose(ProposalRequest("sm", TASK, seed=seed))
        assert p.error is None and p.strategy in cells
        if fresh_cell(n, seed, 0)[1]:
            assert p.source not in defaults and p.raw_reply, p.raw_reply  # the changed knobs are named
            variants.append(p.source)
    assert len(set(variants)) > n  # different seeds, different variants
    knobs = [{k.name: k.value for k in find_knobs(v)} for v in variants]
    assert all(k.get("NUM_WARPS", 8) <= 16 for k in knobs)
    again = [proposer.propose(ProposalRequest("sm", TASK, seed=seed))[0].source
             for seed in range(n, 4 * n * (1 + FRESH_VARIANTS)) if fresh_cell(n, seed, 0)[1]]
    assert again == variants  # a pure function of the request
