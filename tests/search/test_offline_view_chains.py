"""Views around matmuls and gathers: ``bmm``/``mm`` where M or N is 1 (``einsum('bk,bkd->bd')``, attention pooling's
``bmm(h, q[..., None])``) are a broadcast product and a sum over K, a reduction the row strategies run; chains of
views of a computed tensor that keep its elements in order (a permute of unit dims between two views, as einsum
writes them) are judged where they end; an ``expand`` of an input that is then regrouped (grouped-query attention's
shared key heads) is taken by the forward with its expanded sizes; views and permutes of a gathered table
(``table[index].view(n, n, heads).permute(2, 0, 1)``, Swin's relative-position bias) are gathers by a view of the
index. Each generated kernel is judged by the real verifier on the CPU (Triton interpreter)."""

from __future__ import annotations

import pytest

from kernelevo.search.offline import OfflineProposer
from kernelevo.search.proposer import ProposalRequest

HEADER = "import torch\nfrom torch import nn\n\n\n"

EINSUM_GATES = HEADER + '''class Model(nn.Module):
    def __init__(self, dim: int = 33):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim, dtype=torch.bfloat16))

    def forward(self, w, e):
        return torch.nn.functional.gelu(torch.einsum("bk,bkd->bd", w, e) + self.bias)


def get_init_inputs():
    return [33]


def get_inputs():
    return [torch.rand(9, 5, dtype=torch.bfloat16), torch.randn(9, 5, 33, dtype=torch.bfloat16)]


def get_small_cases():
    return [get_inputs(), [torch.rand(1, 3, dtype=torch.bfloat16), torch.randn(1, 3, 33, dtype=torch.bfloat16)]]
'''

POOL_SCORES = HEADER + '''class Model(nn.Module):
    def forward(self, h, q, mask_bias):
        scores = torch.bmm(h, q.unsqueeze(-1)).squeeze(-1)
        return scores * h.shape[-1] ** -0.5 + mask_bias


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(6, 11, 24), torch.randn(6, 24), torch.where(torch.rand(6, 11) < 0.2, -1e4, 0.0)]
'''

BMM_ROW_VECTOR = HEADER + '''class Model(nn.Module):
    def forward(self, w, e):
        return torch.bmm(w.unsqueeze(1), e) * 2 - 1


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(5, 3), torch.randn(5, 3, 7)]
'''

GQA_SCORES = HEADER + '''class Model(nn.Module):
    def __init__(self, groups: int = 3):
        super().__init__()
        self.groups = groups

    def forward(self, q, k):
        b, hkv, s, d = k.shape
        k = k[:, :, None].expand(b, hkv, self.groups, s, d).reshape(b, hkv * self.groups, s, d)
        return torch.matmul(q, k.transpose(-1, -2)) * d ** -0.5


def get_init_inputs():
    return [3]


def get_inputs():
    return [torch.randn(3, 6, 9, 16), torch.randn(3, 2, 13, 16)]


def get_small_cases():
    return [get_inputs(), [torch.randn(1, 6, 1, 16), torch.randn(1, 2, 21, 16)]]
'''


SWIN_BIAS = HEADER + """class Model(nn.Module):
    def __init__(self, window: int = 3, heads: int = 5):
        super().__init__()
        self.n, self.heads = window * window, heads
        self.table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads))
        coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (window - 1)
        self.register_buffer("index", (rel[..., 0] * (2 * window - 1) + rel[..., 1]).reshape(-1), persistent=False)

    def forward(self, scores):
        bias = self.table[self.index].view(self.n, self.n, self.heads).permute(2, 0, 1)
        return scores + bias.unsqueeze(0)


def get_init_inputs():
    return [3, 5]


def get_inputs():
    return [torch.randn(2, 5, 9, 9)]


def get_small_cases():
    return [get_inputs(), [torch.randn(1, 5, 9, 9)]]
"""

T5_BIAS = HEADER + """class Model(nn.Module):
    def __init__(self, length: int = 11, heads: int = 3, buckets: int = 8):
        super().__init__()
        self.rel_emb = nn.Embedding(buckets, heads)
        rel = torch.arange(length)[None, :] - torch.arange(length)[:, None]
        self.register_buffer("bucket", rel.clamp(-buckets // 2, buckets // 2 - 1) + buckets // 2, persistent=False)

    def forward(self, scores):
        return scores + self.rel_emb(self.bucket).permute(2, 0, 1).unsqueeze(0)


def get_init_inputs():
    return [11, 3, 8]


def get_inputs():
    return [torch.randn(2, 3, 11, 11)]
"""


@pytest.mark.parametrize(("op_id", "source", "strategy", "in_forward"), [
    ("swin_bias", SWIN_BIAS, "pointwise-tile2d", "index.reshape("),  # view, permute, unsqueeze of table[index]
    ("t5_bias", T5_BIAS, "pointwise-tile2d", ".permute(2, 0, 1)"),  # embedding(table, 2-D index), permuted
    ("einsum_gates", EINSUM_GATES, "rowwise-1pass", ".transpose(-1, -2)"),  # M = 1: a sum over K, moved last
    ("pool_scores", POOL_SCORES, "rowwise-1pass", ".transpose(-1, -2)"),  # N = 1: a row sum
    ("bmm_row_vector", BMM_ROW_VECTOR, "rowwise-1pass", ".permute("),  # the 3-D result, read by the epilogue
    ("gqa_scores", GQA_SCORES, "matmul-tiled", ".expand("),  # shared key heads, expanded, then regrouped
])
def test_vector_products_and_view_chains_are_accepted_by_the_verifier(tmp_path, op_id, source, strategy,
                                                                      in_forward):
    from offline_judging import GUARDED

    from evaluator import evaluate

    task = tmp_path / f"{op_id}.py"
    task.write_text(source)
    proposer = OfflineProposer()
    assert proposer.strategies(source)[0] == strategy
    [p] = proposer.propose(ProposalRequest(op_id, source))
    assert p.error is None, p.error
    assert p.strategy == strategy
    assert in_forward in p.source.split("def forward", 1)[1]
    if strategy != "matmul-tiled":
        assert "tl.dot" not in p.source  # no tile of which one row or column is used (or no matmul at all)
    candidate = tmp_path / "cand.py"
    candidate.write_text(p.source)
    verdict = evaluate(task, candidate, device="cpu", options=GUARDED)
    assert verdict.accepted, verdict.detail


VIEW_THEN_OP = HEADER + '''class Model(nn.Module):
    def forward(self, x):
        h = torch.bmm(x, x.transpose(1, 2)).view(x.shape[0], -1)
        return h * 2


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(2, 3, 4)]
'''


def test_a_view_chain_read_by_an_op_is_refused_at_the_view():
    """A reshape of a matmul's result that changes its last dim, then read by a pointwise op: the refusal names the
    view's line, said before any session starts."""
    proposer = OfflineProposer()
    assert proposer.strategies(VIEW_THEN_OP) == []
    [why] = proposer.unsupported(VIEW_THEN_OP)
    assert why.aten == "aten.view" and ".view(x.shape[0], -1)" in why.code, why
    assert "changes the last dimension of a computed tensor" in why.why
