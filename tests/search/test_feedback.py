"""Feedback rendering: a verdict becomes specific, trimmed text for the proposer."""

from evaluator.verdict import Reason, Verdict
from kernelevo.search.feedback import render_feedback, trim_log


def test_compile_error_shows_first_and_last_lines_of_the_output():
    logs = "\n".join(["CompilationError at 12:8:"] + [f"frame {i}" for i in range(40)] + ["NameError: tl.foo"])
    text = render_feedback(Verdict.reject(Reason.COMPILE_ERROR, "kernel failed to compile", logs=logs))
    assert "Verdict: rejected (compile_error): kernel failed to compile" in text
    assert "CompilationError at 12:8:" in text
    assert "NameError: tl.foo" in text
    assert "frame 20" not in text and "lines omitted" in text


def test_incorrect_names_failing_case_check_and_error_sizes():
    failing = [{"check": 3, "distribution": "uniform", "max_abs_err": 0.5, "max_rel_err": 2.0, "rel_l2_err": 0.25,
                "ok": False},
               {"check": 4, "distribution": "normal", "max_abs_err": 9.0, "max_rel_err": 9.0, "rel_l2_err": 0.9,
                "ok": False}]
    verdict = Verdict.reject(Reason.INCORRECT, "case 1 check 3 differs", correctness={"cases": [
        {"case": 0, "inputs": [{"shape": [4, 8], "dtype": "torch.float32"}],
         "checks": [{"check": 1, "distribution": "normal", "max_abs_err": 1e-7, "max_rel_err": 1e-6,
                     "rel_l2_err": 1e-7, "ok": True}]},
        {"case": 1, "inputs": [{"shape": [97, 1025], "dtype": "torch.float16"}, {"type": "float", "value": 1e-6}],
         "tolerance": [{"atol": 0.01, "rtol": 0.01, "rel": 0.002}], "checks": failing}]})
    text = render_feedback(verdict)
    assert ("case 1 (inputs (97, 1025) float16, float=1e-06; tolerance atol=0.01 rtol=0.01 rel=0.002): 2 of 2 checks"
            " fail; worst: check 4 (normal): max_abs_err=9 max_rel_err=9 rel_l2_err=0.9") in text
    assert "case 0" not in text.split("Failing correctness checks:")[1]


def test_static_violations_list_rule_and_line():
    verdict = Verdict.reject(Reason.STATIC_VIOLATION, "torch op in forward", static={"violations": [
        {"rule": "torch-compute", "line": 31, "col": 15, "message": "torch.softmax computes the answer"}]})
    assert "line 31:15 [torch-compute] torch.softmax computes the answer" in render_feedback(verdict)


def test_timings_per_case_against_baselines_and_roofline():
    verdict = Verdict.accept("ok", timing={
        "cases": [{"case": 0, "candidate": {"median_ms": 0.08, "p25_ms": 0.079, "p75_ms": 0.081},
                   "eager": {"median_ms": 1.04}, "compile_default": {"median_ms": 0.07},
                   "compile_max_autotune": {"median_ms": 0.068}, "speedup_vs_best": 0.85, "floor_ms": 0.063,
                   "roofline_fraction": 0.79}],
        "geomean_speedup_vs_eager": 13.0, "geomean_speedup_vs_compile": 0.85, "geomean_speedup_vs_best": 0.85},
        resources={"k": {"registers": 40, "spills": 0}},
        overhead={"peak_gpu_memory_mb": 512.0, "load_s": 1.7, "startup_s": 4.0})
    text = render_feedback(verdict)
    assert "Resources: k: (registers 40, spills 0), peak_gpu_memory_mb=512, load_s=1.7" in text
    assert "case 0: candidate 0.08 ms [p25 0.079, p75 0.081]; eager 1.04 ms" in text
    assert "max-autotune 0.068 ms -> x0.85 vs best; HBM floor 0.063 ms (79% of roofline)" in text
    assert "x13 vs eager" in text and "startup_s" not in text


def test_untimed_verdict_says_so_and_long_feedback_is_trimmed():
    text = render_feedback(Verdict.accept("ok", timing_note="CPU run: nothing was timed"))
    assert "Timing: CPU run: nothing was timed" in text
    long = Verdict.reject(Reason.CRASHED, "x" * 5000)
    assert len(render_feedback(long, max_chars=500)) <= 500
    assert render_feedback(None) == ""


def test_trim_log_keeps_short_logs_whole():
    assert trim_log("a\n\nb\n") == ["a", "b"]


def test_per_kernel_resources_are_listed_by_kernel():
    verdict = Verdict.accept("d", resources={"rms_norm_kernel": {"registers": 32, "spills": 4}})
    assert "rms_norm_kernel: (registers 32, spills 4)" in render_feedback(verdict)


def test_an_older_record_still_gives_its_failing_checks():
    """Run directories of older versions list per-seed outcomes; a resumed run shows them as checks."""
    record = {"verdict": "rejected", "reason": "incorrect", "detail": "d", "correctness": {
        "seeds": [11, 12], "init_seed": 3, "cases": [{"case": 0, "inputs": [{"shape": [8], "dtype": "torch.float32"}],
                                                      "seeds": [{"seed": 11, "phase": "correctness", "ok": True},
                                                                {"seed": 12, "phase": "correctness", "ok": False,
                                                                 "max_abs_err": 2.0}]}]}}
    text = render_feedback(Verdict.from_dict(record))
    assert "case 0 (inputs (8,) float32): 1 of 2 checks fail; worst: check 2 (task, correctness): max_abs_err=2" in text
