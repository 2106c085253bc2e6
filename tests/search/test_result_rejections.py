"""``SearchResult.rejections``: rejected candidates by reason, counted by the search from its archive, and read by
a report that has no archive (a job's result)."""

from __future__ import annotations

from search_doubles import ScriptedEvaluator, ScriptedProposer

from evaluator.verdict import Reason
from kernelevo.report.build import RunRecords, build
from kernelevo.search.api import run_search
from kernelevo.search.budget import Budget
from kernelevo.search.config import SearchConfig
from kernelevo.search.engine import SearchLoop
from kernelevo.search.result import SearchResult, rejection_counts
from kernelevo.search.rundir import RunDir, read_jsonl


def test_rejection_counts_count_judged_rejections_by_reason_in_the_enums_order():
    records = [
        {"kind": "evaluated", "accepted": False, "verdict": {"reason": "timeout"}},
        {"kind": "evaluated", "accepted": False, "verdict": {"reason": "incorrect"}},
        {"accepted": False, "verdict": {"reason": "incorrect"}},  # records before `kind` existed were judged
        {"kind": "evaluated", "accepted": False, "verdict": None, "reason": "crashed"},  # the reason on the record
        {"kind": "evaluated", "accepted": True, "verdict": {"reason": "ok"}},
        {"kind": "duplicate", "accepted": False, "verdict": {"reason": "incorrect"}},  # judged once, counted once
        {"kind": "proposal_error", "accepted": False, "verdict": None},
        {"kind": "evaluated", "accepted": False, "verdict": {"reason": "a reason from a newer version"}},
        {"kind": "evaluated", "accepted": False, "verdict": {"reason": "ok"}},
    ]
    counts = rejection_counts(records)
    assert counts == {"incorrect": 2, "crashed": 1, "timeout": 1}
    assert list(counts) == ["incorrect", "crashed", "timeout"]  # Reason's order, not the archive's
    assert rejection_counts([]) == {}


def _loop(run: RunDir, candidates: int) -> SearchLoop:
    return SearchLoop(op_id="demo", task_source="", proposer=ScriptedProposer(), evaluator=ScriptedEvaluator(),
                      run=run, budget=Budget(candidates=candidates, plateau_generations=None),
                      config=SearchConfig(parallel_evaluations=1), seed=3, backend="triton", hardware={}, prices={})


def test_the_engine_counts_every_sessions_rejections_as_the_archive_holds_them(tmp_path):
    run = RunDir(tmp_path / "run")
    run.create({})
    first = _loop(run, 12)
    first.run()
    judged = [r for r in run.candidates() if r.get("kind", "evaluated") == "evaluated"]
    rejected = sum(not r["accepted"] for r in judged)
    assert rejected and first.rejections() == {"incorrect": rejected}  # the scripted evaluator's one reason

    again = _loop(run, 30)  # a later session of the same run (as a resumed job's next chunk)
    again.run()
    archive = read_jsonl(run.archive_path)
    total = sum(not r["accepted"] for r in archive if r.get("kind", "evaluated") == "evaluated")
    assert total > rejected and again.rejections() == {"incorrect": total} == rejection_counts(archive)


def test_the_field_round_trips_and_an_older_summary_has_none():
    result = SearchResult(op_id="demo", run_dir="r", stop_reason="plateau", best=None, candidates_evaluated=3,
                          candidates_accepted=0, tokens_in=0, tokens_out=0, cost_usd=0.0,
                          evaluator_busy_fraction=None, baselines=None, started="", ended="",
                          time_to_first_accepted_s=None, rejections={"incorrect": 3})
    assert SearchResult.from_dict(result.to_dict()).rejections == {"incorrect": 3}
    older = {k: v for k, v in result.to_dict().items() if k != "rejections"}
    assert SearchResult.from_dict(older).rejections is None


def _summary(**extra: object) -> dict:
    return {"op_id": "ops/x.py::f", "stop_reason": "budget_candidates", "best": None, "candidates_evaluated": 4,
            "candidates_accepted": 0, **extra}


def test_a_report_without_the_archive_reads_the_results_counts_and_never_invents_them():
    counted = build(RunRecords(summary=_summary(rejections={"incorrect": 3, "timeout": 1})))
    assert counted.cost.rejected == {Reason.INCORRECT: 3, Reason.TIMEOUT: 1}
    damaged = build(RunRecords(summary=_summary(rejections={"incorrect": "3", "ok": 2, "crashed": True, "x": 1,
                                                            "timeout": -1, "too_slow": 2})))
    assert damaged.cost.rejected == {Reason.TOO_SLOW: 2}  # only counts, only rejection reasons
    assert build(RunRecords(summary=_summary())).cost.rejected is None  # not recorded: "not recorded", never 0
    archive = [{"id": "a", "kind": "evaluated", "accepted": False, "verdict": {"reason": "crashed"}}]
    both = build(RunRecords(summary=_summary(rejections={"incorrect": 3}), archive=archive))
    assert both.cost.rejected == {Reason.CRASHED: 1}  # the archive, where there is one, is the source


def test_run_search_reports_its_rejections(tmp_path):
    task = tmp_path / "task.py"
    task.write_text("# a task file (the scripted evaluator does not read it)\n")
    result = run_search(task, op_id="demo", backend="triton", proposer=ScriptedProposer(), device="cuda",
                        budget=Budget(candidates=12, plateau_generations=None), run_dir=tmp_path / "run", seed=3,
                        evaluator=ScriptedEvaluator(), config=SearchConfig(parallel_evaluations=1))
    assert result.rejections == rejection_counts(read_jsonl(tmp_path / "run" / "archive.jsonl"))
    assert result.rejections
