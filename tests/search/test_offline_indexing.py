"""Index-built values in the offline proposer: masks from ``arange`` and gathers of table rows.

Each op is judged by the real verifier on CPU (Triton interpreter); the generated sources are also read
to check what the kernels load (no mask tensor; the table through the loaded index).
"""

from __future__ import annotations

import re

import pytest

from kernelevo.search.offline import OfflineProposer
from kernelevo.search.offline.analysis import unsupported_ops
from kernelevo.search.offline.trace import trace_task
from kernelevo.search.proposer import ProposalRequest

HEADER = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"
FOOTER = '''

def get_init_inputs():
    return []
'''

CAUSAL_ARANGE = HEADER + '''class Model(nn.Module):
    def forward(self, scores):
        s = scores.shape[-1]
        pos = torch.arange(s, device=scores.device)
        keep = pos[:, None] >= pos[None, :]
        return torch.softmax(scores.float().masked_fill(~keep, float("-inf")), dim=-1).to(scores.dtype)


def get_inputs():
    return [torch.randn(1, 2, 37, 37, dtype=torch.bfloat16)]
''' + FOOTER

CAUSAL_TRIL = HEADER + '''class Model(nn.Module):
    def forward(self, scores):
        s = scores.shape[-1]
        keep = torch.ones(s, s, dtype=torch.bool, device=scores.device).tril()
        return torch.softmax(scores.masked_fill(keep == 0, float("-inf")), dim=-1)


def get_inputs():
    return [torch.randn(2, 29, 29)]
''' + FOOTER

# an arange with a start and a step, in float, used as a per-column and a per-row value
POSITIONS = HEADER + '''class Model(nn.Module):
    def forward(self, x):
        cols = torch.arange(3, 3 + 2 * x.shape[-1], 2, dtype=torch.float32, device=x.device)
        rows = torch.arange(x.shape[0], device=x.device)[:, None]
        return x * cols + rows


def get_inputs():
    return [torch.randn(19, 45)]
''' + FOOTER

BAG_SUM = HEADER + '''class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(300, 40))

    def forward(self, idx):
        return self.weight[idx].sum(1), self.weight[idx].amax(1)


def get_inputs():
    return [torch.randint(-300, 300, (13, 5))]
''' + FOOTER

EMBEDDING_MEAN = HEADER + '''class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(257, 33)

    def forward(self, idx):
        return F.embedding(idx, self.emb.weight).mean(1)


def get_inputs():
    return [torch.randint(0, 257, (6, 7))]
''' + FOOTER


@pytest.fixture(scope="module")
def proposer():
    return OfflineProposer()


def _accepted(proposer, tmp_path, name, source, seeds=(0,), strategy=None):
    """The offline proposer's candidate for each seed, each accepted by the verifier on CPU (and of ``strategy``; the
    first also by the plain run, offline_judging.py)."""
    from offline_judging import judge, session_for

    task = tmp_path / f"{name}.py"
    task.write_text(source)
    sources = []
    with session_for(str(task)) as session:
        for seed in seeds:
            [p] = proposer.propose(ProposalRequest(name, source, seed=seed))
            assert p.error is None and strategy in (None, p.strategy), (p.error, p.strategy)
            verdict = judge(session, p.source, f"{name}-{seed}-{p.strategy}", plain=not sources)
            where = f"{name} / seed {seed} / {p.strategy}"
            assert verdict.accepted, f"{where}: {verdict.reason}: {verdict.detail}\n{p.source}"
            sources.append(p.source)
    return sources


@pytest.mark.parametrize("name,source", [("causal_arange", CAUSAL_ARANGE), ("causal_tril", CAUSAL_TRIL)])
def test_a_causal_mask_built_in_the_op_is_a_predicate_not_a_tensor(proposer, tmp_path, name, source):
    assert unsupported_ops(trace_task(source)) == []
    assert proposer.strategies(source) == ["rowwise-1pass", "rowwise-looped"]
    for src in _accepted(proposer, tmp_path, name, source, seeds=(0, 1)):
        kernel = src.split("@triton.jit", 1)[1].split("class ModelNew")[0]
        assert re.findall(r"(\w+)_ptr,", kernel) == ["scores", "out0"], kernel  # the mask is computed, not read
        assert re.search(r"\(i\d >= cols\)|\(cols - i\d\)", kernel), kernel  # query position vs the column


def test_an_arange_with_start_step_and_dtype_is_the_position(proposer, tmp_path):
    [src] = _accepted(proposer, tmp_path, "positions", POSITIONS)
    kernel = src.split("@triton.jit", 1)[1]
    assert "(3 + cols * 2)).to(tl.float32)" in kernel and kernel.count("tl.load(") == 1


def test_an_embedding_bag_loops_over_the_bag_and_wraps_negative_indices(proposer, tmp_path):
    cells = proposer.strategies(BAG_SUM)
    assert cells == ["pointwise-tile2d", "rowwise-1pass", "rowwise-looped"]
    sources = _accepted(proposer, tmp_path, "bag", BAG_SUM, seeds=range(len(cells)))
    for src in sources:
        assert "for bag_j" in src and "+ weight_nrows" in src  # negative indices count from the end
        assert "in_table_" in src  # and nothing outside the table is read


def test_embedding_rows_and_an_embedding_mean(proposer, tmp_path):
    rows = EMBEDDING_MEAN.replace("F.embedding(idx, self.emb.weight).mean(1)", "self.emb(idx) * 2.0")
    for name, source in (("emb_rows", rows), ("emb_mean", EMBEDDING_MEAN)):
        [src] = _accepted(proposer, tmp_path, name, source)
        assert "in_table_" in src and "+ emb_weight_nrows" not in src  # embedding does not wrap negative indices


def test_gathers_the_generator_does_not_handle_are_named(proposer):
    src = HEADER + '''class Model(nn.Module):
    def forward(self, x, i, j):
        return x[i, j]


def get_inputs():
    return [torch.randn(8, 8), torch.randint(0, 8, (4,)), torch.randint(0, 8, (4,))]
''' + FOOTER
    [p] = proposer.propose(ProposalRequest("two_index", src))
    assert p.source == "" and "more than one index tensor" in p.error
