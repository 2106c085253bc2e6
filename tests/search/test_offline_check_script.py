"""``bench/ops/_check_offline.py`` (how bench/heldout is run): an op with no candidate in a run says why."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("check_offline", ROOT / "bench" / "ops" / "_check_offline.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_op_whose_strategies_were_all_skipped_says_so():
    why = _script().no_candidate_reason(["pointwise-tile2d", "rowwise-1pass"], {"pointwise-tile2d", "rowwise-1pass"},
                                        None)
    assert why == "no strategy run: all 2 that fit were skipped by --skip (pointwise-tile2d, rowwise-1pass)"
    assert "None" not in why


def test_an_op_the_proposer_refuses_gives_its_reason():
    reason = _script().no_candidate_reason([], set(), "not supported by the offline proposer: aten.foo at line 3")
    assert reason == "no strategy: not supported by the offline proposer: aten.foo at line 3"
    assert _script().no_candidate_reason([], set(), None) == "no strategy: the offline proposer gave no reason"
