"""The offline "tune" operator: AST rewrites of launch parameters, deterministic per seed."""

from __future__ import annotations

import ast

from kernelevo.search.offline import OfflineProposer
from kernelevo.search.offline.tune import find_knobs, tune_source
from kernelevo.search.proposer import Parent, ProposalRequest

LLM_STYLE = '''import torch
import triton
import triton.language as tl
from torch import nn

GROUP_SIZE = 8  # a launch parameter
SCALE = 3  # not a launch parameter


@triton.jit
def k(x_ptr, n, BLOCK_SIZE: tl.constexpr):
    pass


class ModelNew(nn.Module):
    def forward(self, x):
        k[(triton.cdiv(x.numel(), 1024),)](x, x.numel(), BLOCK_SIZE=1024, num_warps=4, num_stages=2)
        return x
'''


def test_knobs_are_constants_and_launch_keywords_only():
    names = {(k.name, k.value, k.where) for k in find_knobs(LLM_STYLE)}
    assert names == {("GROUP_SIZE", 8, "constant"), ("BLOCK_SIZE", 1024, "launch"),
                     ("num_warps", 4, "launch"), ("num_stages", 2, "launch")}


def test_tuning_is_deterministic_and_changes_only_knobs():
    a, changes_a = tune_source(LLM_STYLE, seed=7)
    b, changes_b = tune_source(LLM_STYLE, seed=7)
    assert a == b and changes_a == changes_b and changes_a
    assert a != LLM_STYLE
    ast.parse(a)
    before = {k.name: k.value for k in find_knobs(LLM_STYLE)}
    after = {k.name: k.value for k in find_knobs(a)}
    changed = {n for n in before if before[n] != after[n]}
    assert changed and len(changed) <= 2
    for name in changed:  # powers of two move by a factor of two
        assert after[name] in (before[name] * 2, before[name] // 2)
    assert "SCALE = 3" in a and "def k(x_ptr, n, BLOCK_SIZE: tl.constexpr)" in a


def test_different_seeds_explore_different_variants():
    variants = {tune_source(LLM_STYLE, seed=s)[0] for s in range(12)}
    assert len(variants) >= 3


def test_source_without_knobs_is_returned_unchanged():
    src = "import torch\n\nclass ModelNew(torch.nn.Module):\n    pass\n"
    assert tune_source(src, seed=1) == (src, [])
    assert tune_source("def broken(:", seed=1) == ("def broken(:", [])


def test_proposer_tunes_any_triton_parent():
    proposer = OfflineProposer()
    parent = Parent(source=LLM_STYLE, strategy="llm-fused", backend="triton")
    req = ProposalRequest("op", task_source="", operator="tune", parents=[parent], seed=3, count=3)
    out = proposer.propose(req)
    assert len(out) == 3 and all(p.error is None and p.operator == "tune" for p in out)
    assert all(p.strategy == "llm-fused" and p.raw_reply for p in out)
    assert [p.source for p in out] == [p.source for p in proposer.propose(req)]


def test_tune_without_a_usable_parent_is_an_error_not_an_exception():
    proposer = OfflineProposer()
    [p] = proposer.propose(ProposalRequest("op", "", operator="tune"))
    assert p.source == "" and "needs a Triton parent" in p.error
    plain = Parent(source="import torch\n", backend="triton")
    [p] = proposer.propose(ProposalRequest("op", "", operator="tune", parents=[plain]))
    assert "no tunable launch parameters" in p.error
