"""compute-sanitizer runs: the exit status decides, the candidate's prints never do."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.sanitize import ERROR_EXIT, SanitizerStatus, classify, find_sanitizer

ROOT = Path(__file__).resolve().parents[2]


def test_clean_run_is_clean_even_if_the_log_says_otherwise():
    status, _ = classify(0, "========= ERROR SUMMARY: 3 errors\n")  # a candidate may print anything
    assert status is SanitizerStatus.CLEAN


def test_error_exit_status_is_errors_whatever_the_log_says():
    status, summary = classify(ERROR_EXIT, "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)")
    assert status is SanitizerStatus.ERRORS and "RACECHECK SUMMARY" in summary


def test_unsupported_runtime_is_unavailable_not_clean():
    status, _ = classify(1, "========= Error: Device not supported\n")
    assert status is SanitizerStatus.UNAVAILABLE


def test_any_other_ending_is_inconclusive():
    assert classify(-9, "")[0] is SanitizerStatus.FAILED
    assert classify(None, "")[0] is SanitizerStatus.FAILED


@pytest.mark.gpu
def test_racecheck_catches_a_shared_memory_race_and_passes_the_honest_kernel():
    from evaluator import EvalOptions, EvaluationSession

    if find_sanitizer() is None:
        pytest.skip("compute-sanitizer is not installed here")
    options = EvalOptions(sanitize=True, baselines=("eager",), small_cases=True)
    with EvaluationSession(ROOT / "tests" / "tasks" / "rmsnorm.py", device="cuda", options=options) as session:
        honest = session.evaluate(ROOT / "tests" / "candidates" / "honest" / "rmsnorm_cuda.py")
        racy = session.evaluate(ROOT / "tests" / "candidates" / "adversarial_v2" / "race_shared_memory.py")
    unavailable = [f for f in honest.flags if "unavailable" in f]
    if unavailable:
        pytest.skip(unavailable[0])
    assert honest.accepted, honest.detail
    assert not racy.accepted and racy.reason == "incorrect", racy.detail
