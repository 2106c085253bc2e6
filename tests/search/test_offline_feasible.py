"""The offline proposer offers only candidates that can run: grid limits, row widths, shared memory.

Launches are read from each generated launcher on the meta device (no memory, no kernel runs), so the
64M-element case below is checked at its real size.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_offline import TASKS

from kernelevo.search.offline import OfflineProposer
from kernelevo.search.offline.launches import GRID_LIMITS, grid_problem, record_launches, shared_memory_limit
from kernelevo.search.offline.module import generate
from kernelevo.search.offline.trace import trace_task
from kernelevo.search.offline.tune import find_knobs, knob_shared_memory
from kernelevo.search.proposer import Parent, ProposalRequest

ROOT = Path(__file__).resolve().parents[2]
HEADER = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"
H200 = {"device": "cuda", "name": "NVIDIA H200", "capability": "9.0", "sm_count": 132}

OPTIMIZER = HEADER + '''class Model(nn.Module):
    def __init__(self, lr: float = 1e-3, wd: float = 0.01):
        super().__init__()
        self.lr, self.wd = lr, wd

    def forward(self, p, g):
        return p - self.lr * (g + self.wd * p)


def get_inputs():
    return [torch.randn(1 << 26), torch.randn(1 << 26)]


def get_cases():
    return [get_inputs(), [torch.randn(3000), torch.randn(3000)]]


def get_small_cases():
    return [[torch.randn(1000), torch.randn(1000)]]


def get_init_inputs():
    return [1e-3, 0.01]
'''

WIDE_SOFTMAX = HEADER + '''class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(64, 65536)]


def get_cases():
    return [get_inputs(), [torch.randn(8, 1000)]]


def get_small_cases():
    return [[torch.randn(5, 300)]]


def get_init_inputs():
    return []
'''

LINEAR = TASKS["linear_relu"]  # matmul with a fused bias + activation epilogue


@pytest.fixture(scope="module")
def proposer():
    return OfflineProposer()


def _within_limits(grid: tuple[int, ...]) -> bool:
    return 0 < len(grid) <= 3 and all(0 < n <= limit for n, limit in zip(grid, GRID_LIMITS))


def test_every_launch_of_a_flat_64m_op_respects_the_grid_limits(proposer):
    """Regression (H200): the tiled strategy launched (1, 65536) for a flat optimizer step."""
    traced = trace_task(OPTIMIZER)
    cells = proposer.strategies(OPTIMIZER)
    assert cells[0] == "pointwise-tile2d" and "rowwise-looped" in cells
    assert "rowwise-1pass" not in cells  # a 64M-wide row: its launcher refuses, so it is never offered
    for strategy in cells:
        per_case = record_launches(generate(traced, strategy, "opt"), traced.init_inputs, traced.meta_cases)
        assert len(per_case) == 2 and all(per_case)
        for launches in per_case:
            for launch in launches:
                assert _within_limits(launch.grid), (strategy, launch)
                assert grid_problem(launch) is None
    [tiled] = record_launches(generate(traced, "pointwise-tile2d", "opt"), traced.init_inputs, traced.meta_cases[:1])
    assert tiled[0].grid[0] * tiled[0].params["BLOCK_COLS"] >= 1 << 26  # every element has a program


def test_grid_problem_names_the_axis_and_the_limit():
    from kernelevo.search.offline.launches import Launch

    assert "axis y" in grid_problem(Launch("k", (1, 65536)))
    assert grid_problem(Launch("k", (2**31 - 1, 65535, 65535))) is None
    assert "axis x" in grid_problem(Launch("k", (2**31,)))


def test_rows_too_wide_for_one_tile_get_the_looped_and_split_strategies_only(proposer):
    """When rowwise-1pass refuses a width, rowwise-looped (and, for one level of reductions, rowwise-split) is
    offered, and 1pass is not evaluated."""
    assert proposer.strategies(WIDE_SOFTMAX) == ["rowwise-looped", "rowwise-split"]
    outs = proposer.propose(ProposalRequest("sm", WIDE_SOFTMAX, count=4, seed=5))
    assert {p.strategy for p in outs} == {"rowwise-looped", "rowwise-split"} and all(p.error is None for p in outs)


def test_shared_memory_beyond_the_device_limit_is_never_proposed(proposer):
    traced = trace_task(LINEAR)
    big = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 128, "GROUP_M": 8, "NUM_WARPS": 8, "NUM_STAGES": 3}
    _, reason = proposer._why_not(traced, "matmul-tiled", "lin", big, H200)
    need = (128 + 256) * 128 * 4 * 3  # fp32 tiles, three stages
    assert reason is not None and f"{need} bytes of shared memory" in reason and "232448" in reason
    _, reason = proposer._why_not(traced, "matmul-tiled", "lin", big, {"device": "cpu"})
    assert reason is None  # the interpreter has no shared memory limit
    [p] = proposer.propose(ProposalRequest("lin", LINEAR, hardware=H200))
    limit = shared_memory_limit(H200)
    parents = [Parent(source=p.source, strategy=p.strategy)]
    for seed in range(25):
        for q in proposer.propose(ProposalRequest("lin", LINEAR, operator="tune", parents=parents, seed=seed,
                                                  hardware=H200)):
            assert q.error is None
            assert knob_shared_memory(q.source) <= limit, q.raw_reply


def test_foreign_sources_are_judged_by_their_knobs_only():
    src = "BLOCK_M = 256\nBLOCK_N = 256\nBLOCK_K = 128\nNUM_STAGES = 4\n"
    assert knob_shared_memory(src) == (256 + 256) * 128 * 2 * 4
    assert knob_shared_memory("BLOCK_SIZE = 1024\n") is None
    assert shared_memory_limit({"device": "cuda", "capability": "8.0"}) == 166912
    assert shared_memory_limit({"device": "cuda", "max_shared_memory_per_block": 1000}) == 1000
    assert shared_memory_limit({"device": "cpu"}) is None


def test_mutate_moves_an_own_parent_to_another_feasible_strategy(proposer):
    src = HEADER + '''class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(16, 300)]


def get_init_inputs():
    return []
'''
    [p] = proposer.propose(ProposalRequest("sm", src))
    parent = Parent(source=p.source, strategy=p.strategy)
    seen = set()
    for seed in range(12):
        [q] = proposer.propose(ProposalRequest("sm", src, operator="mutate", parents=[parent], seed=seed))
        assert q.error is None
        seen.add(q.strategy)
        if q.strategy == p.strategy:  # a tuned variant: one to three knobs changed
            before = {k.name: k.value for k in find_knobs(p.source)}
            after = {k.name: k.value for k in find_knobs(q.source)}
            assert 1 <= sum(before[n] != after[n] for n in before) <= 3
    assert seen == {"rowwise-1pass", "rowwise-looped"}
