"""Split reductions (``rowwise-split``): very wide rows reduced in chunks by many programs, then combined; the
strategy is offered where rows are wider than one tile and the reductions are of one level."""

from __future__ import annotations

import pytest

from kernelevo.search.offline import OfflineProposer
from kernelevo.search.offline.launches import record_launches
from kernelevo.search.offline.module import generate
from kernelevo.search.offline.trace import trace_task
from kernelevo.search.proposer import ProposalRequest

HEADER = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"
CASES = '''

def get_inputs():
    return [torch.randn(1, 1 << 20)]


def get_cases():
    return [get_inputs(), [torch.randn(8, 3000)]]


def get_small_cases():
    return [[torch.randn(3, 40000)], [torch.randn(2, 300)]]


def get_init_inputs():
    return []
'''

# a softmax (online max + sum of exponentials), a row sum and a row max, one level of reductions
SOFTMAX_STATS = HEADER + '''class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x * 2.0, dim=-1), x.sum(-1), x.amax(-1, keepdim=True) / 3.0
''' + CASES

RMS_NORM = HEADER + '''class Model(nn.Module):
    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
''' + CASES

LAYER_NORM = HEADER + '''class Model(nn.Module):
    def forward(self, x):
        return F.layer_norm(x, x.shape[-1:])
''' + CASES


@pytest.fixture(scope="module")
def proposer():
    return OfflineProposer()


@pytest.mark.parametrize("name,source", [("softmax_stats", SOFTMAX_STATS), ("rms_norm", RMS_NORM)])
def test_split_reductions_are_accepted_by_the_verifier(proposer, tmp_path, name, source):
    from offline_judging import session_for

    cells = proposer.strategies(source)
    assert cells == ["rowwise-looped", "rowwise-split"]  # 1-pass refuses a 1M-wide row: never offered
    task = tmp_path / f"{name}.py"
    task.write_text(source)
    [p] = proposer.propose(ProposalRequest(name, source, seed=1))
    assert p.strategy == "rowwise-split" and p.error is None
    assert "_partial_kernel[grid](" in p.source and "_finish_kernel[grid](" in p.source
    with session_for(str(task)) as session:
        verdict = session.evaluate_source(p.source, name=name)
    assert verdict.accepted, f"{verdict.reason}: {verdict.detail}\n{p.source}"


def test_one_wide_row_is_reduced_by_many_programs():
    traced = trace_task(SOFTMAX_STATS)
    [[looped]] = record_launches(generate(traced, "rowwise-looped", "sm"), [], traced.meta_cases[:1])
    [[partial, finish]] = record_launches(generate(traced, "rowwise-split", "sm"), [], traced.meta_cases[:1])
    assert looped.grid == (1,)
    assert partial.grid == finish.grid == ((1 << 20) // 16384,)  # a chunk of SPLIT_TILE columns per program
    assert finish.params["BLOCK_SPLITS"] == 64 and partial.params["SPLIT_COLS"] == 16384
    source = generate(traced, "rowwise-split", "sm", {"SPLIT_TILE": 65536})
    [[partial, _]] = record_launches(source, [], traced.meta_cases[:1])
    assert partial.grid == (16,)


def test_softmax_chunks_combine_by_rescaling_to_the_row_maximum():
    source = generate(trace_task(SOFTMAX_STATS), "rowwise-split", "sm")
    finish = source.split("def sm_finish_kernel", 1)[1]
    assert "tl.sum(part1 * tl.exp(part0 - amax_row_safe), axis=1, keep_dims=True)" in finish
    assert "row_mask = row_mask & (rows * 0 + split == 0)" in finish  # the row values are written once per row


def test_reductions_of_two_levels_are_left_to_the_looped_strategy(proposer):
    assert proposer.strategies(LAYER_NORM) == ["rowwise-looped"]
    narrow = SOFTMAX_STATS.replace("1 << 20", "1000")
    assert "rowwise-split" not in proposer.strategies(narrow)  # rows that fit one tile are not split
