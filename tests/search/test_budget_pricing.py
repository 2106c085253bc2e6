"""Budgets (stop decisions, ETA), fitness from verdicts, and the price table."""

import json

import pytest
from pydantic import ValidationError

from evaluator.verdict import Reason, Verdict
from kernelevo.search.budget import Budget, Usage, eta_s, stop_reason
from kernelevo.search.fitness import fitness_of, is_accepted, is_timed, speedups
from kernelevo.search.pricing import cost_usd, load_price_table, price_for


@pytest.mark.parametrize(("usage", "expected"), [
    (Usage(candidates=10), "budget_candidates"),
    (Usage(tokens=1000), "budget_tokens"),
    (Usage(cost_usd=2.0), "budget_usd"),
    (Usage(elapsed_s=61), "budget_time"),
    (Usage(generations_without_improvement=3), "plateau"),
    (Usage(generations_without_candidates=3), "proposer_exhausted"),
    (Usage(candidates=9, tokens=999, cost_usd=1.9, elapsed_s=59), None),
])
def test_each_budget_stops_the_run(usage, expected):
    budget = Budget(candidates=10, tokens=1000, usd=2.0, minutes=1, plateau_generations=3)
    assert stop_reason(budget, usage) == expected


def test_cancel_wins_and_unlimited_budget_never_stops():
    assert stop_reason(Budget(), Usage(), cancelled=True) == "cancelled"
    unlimited = Budget(candidates=None, plateau_generations=None, exhausted_generations=10**9)
    assert stop_reason(unlimited, Usage(candidates=10**6, tokens=10**9)) is None


def test_eta_follows_the_tightest_budget():
    budget = Budget(candidates=100, minutes=10)
    assert eta_s(budget, Usage(candidates=50, elapsed_s=60)) == pytest.approx(60)  # half the candidates
    assert eta_s(budget, Usage(candidates=10, elapsed_s=300)) == pytest.approx(300)  # half the time
    assert eta_s(Budget(candidates=None), Usage(elapsed_s=5)) is None


def test_fitness_is_geomean_vs_best_when_timed_one_when_untimed_zero_when_rejected():
    timed = Verdict.accept("ok", timing={"geomean_speedup_vs_best": 1.3, "geomean_speedup_vs_eager": 9.0,
                                         "geomean_speedup_vs_compile": 1.4})
    assert fitness_of(timed) == 1.3 and speedups(timed) == (9.0, 1.4)
    assert fitness_of(Verdict.accept("ok")) == 1.0
    assert fitness_of(Verdict.reject(Reason.TOO_SLOW, "slow", timing={"geomean_speedup_vs_best": 5})) == 0.0
    assert fitness_of(Verdict.accept("ok", timing={"geomean_speedup_vs_best": float("nan")})) == 0.0
    assert fitness_of(None) == 0.0 and speedups(Verdict.accept("ok")) == (None, None)


def test_fitness_of_a_verdict_held_as_json_validates_it_first():
    """Job records keep verdicts as JSON: the same answers, and a record that is not a verdict is refused."""
    assert fitness_of(Verdict.accept("ok", timing={"geomean_speedup_vs_best": 1.3}).to_dict()) == 1.3
    assert is_accepted({"verdict": "accepted", "timing": None}) and not is_timed({"verdict": "accepted"})
    with pytest.raises(ValidationError, match="reason"):
        is_accepted({"verdict": "rejected"})


def test_prices_match_exact_names_then_longest_prefix():
    table = load_price_table()
    assert price_for("gpt-4o-mini", table) == table["gpt-4o-mini"]
    assert price_for("gpt-4o-2024-08-06", table) == table["gpt-4o"]
    assert price_for("openai/gpt-4o", table) == table["gpt-4o"]
    assert price_for("my-local-llama", table) is None
    assert cost_usd("gpt-4o", 1_000_000, 100_000, table) == pytest.approx(2.5 + 1.0)
    assert cost_usd("unknown", 10, 10, table) is None


def test_price_table_override_replaces_entries_and_bad_files_are_named(tmp_path):
    good = tmp_path / "prices.json"
    good.write_text(json.dumps({"models": {"gpt-4o": {"input": 1, "output": 2}, "local": {"input": 0, "output": 0}}}))
    table = load_price_table(good)
    assert table["gpt-4o"].input == 1 and "local" in table and "o3" in table
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"models": {"m": {"input": "cheap"}}}))
    with pytest.raises(ValueError, match="bad.json: model 'm' needs numeric"):
        load_price_table(bad)
