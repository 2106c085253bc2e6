"""The GPU timing decisions, tested with synthetic statistics (no GPU needed).

``judge_timing`` hands back the verdict's ``timing`` as the evidence dict producers build; it is read here through
the verdict model, as every consumer reads it (which also checks that the model takes everything it produces).
"""

import pytest

from evaluator.options import EvalOptions
from evaluator.timing_judge import judge_timing
from evaluator.verdict import Reason, Timing


def judged(*args):
    timing, rejection = judge_timing(*args)
    return Timing.model_validate(timing), rejection


def stats(median):
    return {"median_ms": median, "p25_ms": median * 0.98, "p75_ms": median * 1.02, "min_ms": median * 0.95, "n": 100}


BASELINES = {"cases": [{"case": 0, "eager": stats(1.0), "compile_default": stats(0.10),
                        "compile_max_autotune": stats(0.08), "floor_ms": 0.06},
                       {"case": 1, "eager": stats(0.02), "compile_default": stats(0.03), "floor_ms": 0.001}],
             "copy_bandwidth_gbps": 4270.0}


def test_speedups_are_over_eager_the_better_compile_mode_and_the_best_of_all():
    timing, rejection = judged([{"case": 0, "candidate": stats(0.07)}, {"case": 1, "candidate": stats(0.01)}],
                               BASELINES, EvalOptions())
    assert rejection is None
    row0, row1 = timing.cases
    assert row0.speedup_vs_eager == pytest.approx(1.0 / 0.07)
    assert row0.speedup_vs_compile == pytest.approx(0.08 / 0.07)  # max-autotune was the better compile
    assert row0.best_compile == row0.compile_max_autotune and row0.best_compile.median_ms == pytest.approx(0.08)
    assert row0.speedup_vs_best == pytest.approx(0.08 / 0.07)
    assert row1.speedup_vs_best == pytest.approx(0.02 / 0.01)  # eager beat compile on the tiny case
    assert row0.roofline_fraction == pytest.approx(0.06 / 0.07)
    assert timing.geomean_speedup_vs_best == pytest.approx(((0.08 / 0.07) * 2.0) ** 0.5)
    assert timing.copy_bandwidth_gbps == 4270.0 and "CUDA events" in timing.method


def test_faster_than_the_physical_floor_is_cheat_suspected():
    _, rejection = judged([{"case": 0, "candidate": stats(0.03)}], BASELINES, EvalOptions())
    assert rejection[0] is Reason.CHEAT_SUSPECTED and "physical floor" in rejection[1]


def test_an_empty_graph_is_timed_by_events_with_a_note_not_refused():
    """<<<grid, block>>> without a stream (the legacy default stream) is not captured by a graph on a side stream;
    where the work ran is the kernel trace's to judge, so the event-timed figure stands, with a note."""
    entry = {"case": 1, "candidate": stats(0.01), "graph": {"empty_graph": True}}
    timing, rejection = judged([entry], BASELINES, EvalOptions())
    assert rejection is None or rejection[0] is not Reason.CHEAT_SUSPECTED
    assert timing.cases[0].empty_graph and timing.cases[0].candidate_graph_ms is None
    assert "legacy default stream" in timing.notes[0] and "case(s) 1" in timing.notes[0]


def test_far_slower_than_the_best_baseline_is_too_slow():
    _, rejection = judged([{"case": 0, "candidate": stats(5.0)}], BASELINES, EvalOptions(max_slowdown=25))
    assert rejection[0] is Reason.TOO_SLOW


def test_a_launch_bound_call_is_never_too_slow():
    """Liger's cross entropy on a 37x1000 case: 0.25 ms (a sync to count targets) against 0.008 ms eager."""
    baselines = {"cases": [{"case": 0, "eager": stats(0.008)}]}
    _, rejection = judged([{"case": 0, "candidate": stats(0.247)}], baselines, EvalOptions(max_slowdown=25))
    assert rejection is None


def test_missing_baselines_leave_speedups_empty_without_rejecting():
    timing, rejection = judged([{"case": 0, "candidate": stats(0.5)}], {"cases": []}, EvalOptions())
    assert rejection is None and timing.geomean_speedup_vs_best is None and timing.cases[0].eager is None


def test_host_clock_far_above_the_events_means_work_off_the_timed_stream():
    hidden = {**stats(0.07), "host_median_ms": 3.5}  # 3.5 ms of device work, 0.07 ms on the timed stream
    _, rejection = judged([{"case": 0, "candidate": hidden}], BASELINES, EvalOptions())
    assert rejection[0] is Reason.CHEAT_SUSPECTED and "outside the timed stream" in rejection[1]


def test_launch_overhead_on_the_host_clock_is_not_suspicious():
    honest = {**stats(0.07), "host_median_ms": 0.4}  # launch + sync latency + the tail of the L2 flush
    _, rejection = judged([{"case": 0, "candidate": honest}], BASELINES, EvalOptions())
    assert rejection is None
