"""bench/run.py's table is computed from search results (the GPU numbers themselves come from the device)."""

import importlib.util
from pathlib import Path

from evaluator.verdict import Reason, Verdict

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
bench_run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_run)


def test_row_and_table_from_a_timed_result():
    case = {"case": 0, "candidate": {"median_ms": 0.07}, "eager": {"median_ms": 1.0},
            "compile_default": {"median_ms": 0.08}, "compile_max_autotune": {"median_ms": 0.075},
            "floor_ms": 0.063, "roofline_fraction": 0.9}
    result = {"op_id": "rms_norm", "candidates_evaluated": 30, "elapsed_s": 60.0, "stop_reason": "plateau",
              "gpu_busy_fraction": 0.85, "evaluator_busy_fraction": 0.9, "time_to_first_accepted_s": 4.2,
              "best": {"verdict": Verdict.accept("ok", timing={
                  "cases": [case, {**case, "case": 1, "roofline_fraction": 0.4}], "geomean_speedup_vs_eager": 14.3,
                  "geomean_speedup_vs_compile": 1.07, "geomean_speedup_vs_best": 1.07}).to_dict()}}
    row = bench_run.bench_row(result)
    assert row["candidates_per_gpu_minute"] == 30 and abs(row["hbm_floor_fraction"] - 0.6) < 1e-9
    table = bench_run.markdown_table([row, bench_run.bench_row(
        {"op_id": "rotary", "candidates_evaluated": 0, "stop_reason": "error"})])
    assert "| rms_norm | yes | 14.30x | 1.07x | 60% | 30.0 | 85% | 90% | 4.2 s | plateau |" in table
    assert "| rotary | no | - | - | - | - | - | - | - | error |" in table
    assert "Geomean vs torch.compile over ops with a timed kernel: 1.07x" in table


def test_rejections_are_tallied_by_reason_with_the_first_detail():
    archive = [{"id": "g0-0", "strategy": "a", "verdict": Verdict.reject(Reason.CRASHED, "x").to_dict()},
               {"id": "g0-1", "strategy": "b", "verdict": Verdict.accept("ok").to_dict()},
               {"id": "g0-2", "strategy": "b", "verdict": Verdict.reject(Reason.CRASHED, "y").to_dict()}]
    assert bench_run.rejections(archive) == {"crashed": {"count": 2, "first": {"id": "g0-0", "strategy": "a",
                                                                               "detail": "x"}}}


def test_evaluation_costs_are_medians_and_totals_over_candidates_with_numbers():
    def candidate(eval_s, **overhead):
        return {"id": "c", "eval_s": eval_s, "verdict": Verdict.accept("ok", overhead=overhead).to_dict()}

    archive = [
        candidate(1.0, load_s=0.2, check_s=0.5, judge_s=0.1, peak_host_memory_mb=900.0, prefetched=True,
                  time_phases={"inputs_s": 0.1, "timed_calls_s": 2.0}),
        candidate(3.0, load_s=0.4, check_s=0.7, time_s=2.5, time_phases={"inputs_s": 0.3}, note_s="n/a"),
        candidate(2.0, load_s=0.3, check_s=0.6, judge_s=0.3),
        {"id": "proposer-failed", "verdict": None},  # nothing measured: not counted
        {"id": "no-overhead", "verdict": Verdict.reject(Reason.CRASHED, "x").to_dict()},
    ]
    costs = bench_run.evaluation_costs(archive)
    assert costs == {
        "n": 3,
        "median": {"eval_s": 2.0, "load_s": 0.3, "check_s": 0.6, "judge_s": 0.2, "time_s": 2.5},
        "total": {"eval_s": 6.0, "load_s": 0.9, "check_s": 1.8, "judge_s": 0.4, "time_s": 2.5},
        "time_phases_median": {"inputs_s": 0.2, "timed_calls_s": 2.0},
    }
    assert bench_run.costs_line(costs) == ("median per candidate (3): eval 2.00 s, check 0.60 s, judge 0.20 s,"
                                           " time 2.50 s")


def test_evaluation_costs_of_no_candidates():
    assert bench_run.evaluation_costs([]) == {"n": 0}
    unmeasured = Verdict.accept("ok", overhead={"prefetched": False}).to_dict()
    assert bench_run.evaluation_costs([{"id": "c", "verdict": unmeasured}]) == {"n": 0}
    assert bench_run.costs_line({"n": 0}) == "no evaluation costs recorded"


def test_duplicates_count_once_and_check_phases_are_summarised():
    verdict = Verdict.reject(Reason.CRASHED, "x", overhead={
        "check_s": 2.0, "check_phases": {"first_call_s": 1.5, "handoff_s": 0.1}}).to_dict()
    archive = [{"id": "g0-0", "kind": "evaluated", "eval_s": 3.0, "verdict": verdict},
               {"id": "g1-0", "kind": "duplicate", "eval_s": 0.0, "verdict": verdict},
               {"id": "g1-1", "kind": "proposal_error", "verdict": None}]
    assert bench_run.rejections(archive)["crashed"]["count"] == 1
    costs = bench_run.evaluation_costs(archive)
    assert costs["n"] == 1 and costs["total"]["check_s"] == 2.0
    assert costs["check_phases_median"] == {"first_call_s": 1.5, "handoff_s": 0.1}


def test_handoff_modes_are_counted_per_evaluated_candidate():
    def record(kind, mode):
        return {"kind": kind, "verdict": Verdict.accept("ok", overhead={"output_handoff": mode}).to_dict()}

    archive = [record("evaluated", "vmm"), record("evaluated", "vmm"), record("duplicate", "vmm"),
               record("evaluated", "file"), {"kind": "evaluated", "verdict": None}]
    assert bench_run.handoff_modes(archive) == {"vmm": 2, "file": 1}
