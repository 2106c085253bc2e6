"""The job's stored result keeps what a report needs to name the winner (its candidate id)."""

from __future__ import annotations

from workflows.models import JobResult
from workflows.store import result_from_summary


def test_the_winners_candidate_id_is_kept_in_the_stored_result():
    summary = {"stop_reason": "plateau", "run_dir": "/somewhere/on/the/worker", "candidates_evaluated": 7,
               "best": {"id": "g3-1", "source": "class ModelNew: ...\n", "verdict": {"verdict": "accepted"},
                        "fitness": 1.4}}
    result = result_from_summary(summary)
    assert (result.best_id, result.best_source, result.best_fitness) == ("g3-1", "class ModelNew: ...\n", 1.4)
    assert "best" not in result.summary and "run_dir" not in result.summary  # the rest is kept as it was
    assert JobResult.model_validate_json(result.model_dump_json()).best_id == "g3-1"  # survives the store


def test_a_result_without_a_winner_or_stored_before_ids_has_none():
    assert result_from_summary({"stop_reason": "budget_candidates", "best": None}).best_id is None
    assert result_from_summary({"best": {"source": "x", "fitness": 1.0}}).best_id is None
    old = JobResult.model_validate({"stop_reason": "plateau", "best_source": "x"})  # a record from before
    assert old.best_id is None
