"""bench/run.py's table is computed from search results (the GPU numbers themselves come from the device)."""

import importlib.util
from pathlib import Path

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
              "best": {"verdict": {"verdict": "accepted", "timing": {
                  "cases": [case, {**case, "case": 1, "roofline_fraction": 0.4}], "geomean_speedup_vs_eager": 14.3,
                  "geomean_speedup_vs_compile": 1.07, "geomean_speedup_vs_best": 1.07}}}}
    row = bench_run.bench_row(result)
    assert row["candidates_per_gpu_minute"] == 30 and abs(row["hbm_floor_fraction"] - 0.6) < 1e-9
    table = bench_run.markdown_table([row, bench_run.bench_row(
        {"op_id": "rotary", "candidates_evaluated": 0, "stop_reason": "error"})])
    assert "| rms_norm | yes | 14.30x | 1.07x | 60% | 30.0 | 85% | 90% | 4.2 s | plateau |" in table
    assert "| rotary | no | - | - | - | - | - | - | - | error |" in table
    assert "Geomean vs torch.compile over ops with a timed kernel: 1.07x" in table


def test_rejections_are_tallied_by_reason_with_the_first_detail():
    archive = [{"id": "g0-0", "strategy": "a", "verdict": {"verdict": "rejected", "reason": "crashed", "detail": "x"}},
               {"id": "g0-1", "strategy": "b", "verdict": {"verdict": "accepted", "reason": "ok"}},
               {"id": "g0-2", "strategy": "b", "verdict": {"verdict": "rejected", "reason": "crashed", "detail": "y"}}]
    assert bench_run.rejections(archive) == {"crashed": {"count": 2, "first": {"id": "g0-0", "strategy": "a",
                                                                               "detail": "x"}}}
