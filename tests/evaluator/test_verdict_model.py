"""The verdict model: what the verifier produces round-trips, old records load, the JSON the bot reads keeps its
shape, and evidence that does not validate can neither be accepted nor stop a session."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from pydantic import ValidationError

from evaluator import EvalOptions, evaluate
from evaluator.report import render_summary
from evaluator.verdict import (
    CheckResult,
    Overhead,
    Reason,
    ScalarSpec,
    TensorSpec,
    Verdict,
)

ROOT = Path(__file__).resolve().parents[2]
TASKS, HONEST = ROOT / "tests" / "tasks", ROOT / "tests" / "candidates" / "honest"
OLD_GPU_RECORD = ROOT / "bench" / "results" / "search_h200" / "rms_norm.json"  # written by an older version, on H200


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def evaluated(task: Path, candidate: Path, device: str, **options) -> tuple[Verdict, list[str]]:
    """One real evaluation, and what the verdict model logged while the evaluator built the verdict."""
    handler = Collect()
    logger = logging.getLogger("evaluator.verdict")
    logger.addHandler(handler)
    try:
        return evaluate(task, candidate, device=device, options=EvalOptions(seeds=2, **options)), handler.messages
    finally:
        logger.removeHandler(handler)


@pytest.fixture(scope="module")
def cpu_run():
    return evaluated(TASKS / "softmax.py", HONEST / "softmax_online.py", "cpu")


@pytest.fixture(scope="module")
def old_gpu_verdict() -> dict:
    return json.loads(OLD_GPU_RECORD.read_text())["best"]["verdict"]


def test_a_real_cpu_verdict_round_trips_and_reads_by_attribute(cpu_run):
    verdict, logged = cpu_run
    assert verdict.accepted and verdict.reason is Reason.OK, verdict.detail
    assert logged == []  # every piece of evidence the evaluator built has a place in the model
    data = verdict.to_dict()
    assert Verdict.from_dict(data) == verdict and json.loads(verdict.to_json()) == data
    assert Verdict.from_dict(json.loads(json.dumps(data))).to_dict() == data
    correctness = verdict.correctness
    assert correctness.seeds == 2 and correctness.reference_precision == "float64"
    # a CPU run judges the task's small cases where it has them (this task does): the summary says which
    assert correctness.small_cases and "checked at the task's small cases only" in verdict.detail
    case = correctness.cases[0]
    assert isinstance(case.inputs[0], TensorSpec) and case.inputs[0].dtype == "torch.float32"
    assert case.checks and all(isinstance(c, CheckResult) and c.ok and c.max_abs_err is not None for c in case.checks)
    assert correctness.checked_calls == sum(len(c.checks) for c in correctness.cases)
    assert verdict.timing is None and not verdict.timed and "not timed" in verdict.timing_note
    assert verdict.static.kernels and verdict.static.enforced and verdict.backend == "triton"
    assert verdict.environment.torch and verdict.environment.gpu is None
    assert verdict.overhead.check_s is not None and verdict.overhead.total_s is not None
    guarded = sum(c.phase == "correctness" for case in correctness.cases for c in case.checks)  # not the plain run's
    assert verdict.overhead.check_phases and verdict.overhead.checked_calls == guarded
    summary = render_summary(verdict)
    assert summary.startswith("ACCEPTED") and f"case 0 [{case.shapes}]" in summary and "check_phases." in summary


def test_nested_evidence_dumps_as_given_so_the_json_keeps_its_shape(cpu_run):
    """A producer's dicts come back out key for key: no nulls for what did not apply (the bot lists the
    environment's entries one by one in its report)."""
    verdict, _ = cpu_run
    data = verdict.to_dict()
    assert "capability" not in data["environment"] and data["environment"]["gpu"] is None  # CPU: given as null
    assert set(data["static"]) == {"violations", "kernels", "launched", "enforced"}
    assert {"shape", "dtype", "contiguous"} == set(data["correctness"]["cases"][0]["inputs"][0])
    assert None not in data["overhead"].values()
    timed = Verdict.accept("d", timing={"cases": [{"case": 0, "candidate": {"median_ms": 1.0}}]}).to_dict()
    assert timed["timing"] == {"cases": [{"case": 0, "candidate": {"median_ms": 1.0}}]}
    assert list(Verdict.model_fields) == list(timed)  # the top level is always complete, as it always was


def test_a_record_of_an_older_version_still_loads(old_gpu_verdict):
    """Per-seed entries (with the seeds themselves) where checks are listed now, the seeds as a list, an
    ``init_seed``: a resumed run directory or a stored job of an older version still reads."""
    assert "seeds" in old_gpu_verdict["correctness"]["cases"][0] and "init_seed" in old_gpu_verdict["correctness"]
    verdict = Verdict.from_dict(old_gpu_verdict)
    assert verdict.accepted and verdict.device == "cuda" and verdict.timed
    assert verdict.correctness.seeds == 5
    checks = verdict.correctness.cases[0].checks
    assert [c.check for c in checks] == list(range(1, len(checks) + 1))
    assert {c.phase for c in checks} == {"correctness", "timed-call re-validation"} and all(c.ok for c in checks)
    row = verdict.timing.cases[0]
    assert row.candidate.median_ms < row.eager.median_ms and row.best_compile is not None
    assert row.candidate.host_median_ms is not None and verdict.timing.geomean_speedup_vs_best > 0
    assert verdict.environment.capability_tuple == (9, 0) and verdict.environment.sm_count == 132
    assert all(k.registers for k in verdict.resources.values())
    again = verdict.to_dict()
    assert "seeds" not in again["correctness"]["cases"][0] and "\"seed\"" not in json.dumps(again["correctness"])
    assert Verdict.from_dict(again) == verdict

    static_era = {"verdict": "rejected", "reason": "static_violation", "detail": "[no-kernel] ...", "task": "t.py",
                  "candidate": "c.py", "device": "cpu", "backend": "unknown", "static": {"violations": [
                      {"rule": "no-kernel", "line": 1, "col": 0, "message": "m"}], "kernels": [], "launched": []},
                  "correctness": {}, "timing": None, "timing_note": "", "flags": [], "overhead": {}, "resources": {},
                  "environment": {}, "logs": ""}  # the dataclass era wrote {} for "no correctness evidence"
    loaded = Verdict.from_dict(static_era)
    assert loaded.correctness is None and loaded.static.violations[0].rule == "no-kernel"


def test_unknown_top_level_keys_are_refused_nested_ones_ignored():
    """The top level has had the same fields in every version: an unknown key there is a producer's typo (the
    evidence would vanish) or a newer record this version would rewrite without it. Nested evidence of other
    versions (``init_seed``, ``hbm_bytes``) is ignored."""
    with pytest.raises(ValidationError, match="timming"):
        Verdict.from_dict({"verdict": "accepted", "reason": "ok", "detail": "d", "timming": {}})
    with pytest.raises(TypeError, match="timming"):
        Verdict.accept("d", timming={})
    with pytest.raises(TypeError, match="verdict"):
        Verdict.reject(Reason.INCORRECT, "d", verdict="accepted")
    loaded = Verdict.from_dict({"verdict": "rejected", "reason": "incorrect", "detail": "d",
                                "correctness": {"init_seed": 3, "cases": [{"case": 0, "hbm_bytes": 8}]}})
    assert loaded.to_dict()["correctness"] == {"cases": [{"case": 0}]}


def test_producers_are_told_about_evidence_the_model_would_drop(caplog):
    with caplog.at_level(logging.WARNING, logger="evaluator.verdict"):
        verdict = Verdict.accept("d", correctness={"cases": [{"case": 0, "checks": [], "newly_measured": 1.0}]})
    assert verdict.accepted
    assert any("CaseEvidence.newly_measured" in m for m in caplog.messages)


def test_the_keys_the_bot_reads_are_in_the_json(old_gpu_verdict, cpu_run):
    """bot/report.py and bot/jobflow.py read verdicts as dicts from job records: every key they read today."""
    timed = Verdict.from_dict(old_gpu_verdict).to_dict()
    untimed = cpu_run[0].to_dict()
    for data in (timed, untimed):
        assert {"verdict", "reason", "detail", "device", "backend", "flags", "environment", "timing_note", "timing",
                "correctness"} <= set(data)
        case = data["correctness"]["cases"][0]
        assert {"case", "checks"} <= set(case)
        assert {"max_abs_err", "max_rel_err"} <= set(case["checks"][0])
    assert {"cases", "geomean_speedup_vs_best", "geomean_speedup_vs_eager", "geomean_speedup_vs_compile"} <= set(
        timed["timing"])
    row = timed["timing"]["cases"][0]
    assert {"case", "candidate", "eager", "compile_default", "compile_max_autotune", "speedup_vs_eager",
            "speedup_vs_compile", "roofline_fraction"} <= set(row)
    assert {"median_ms", "p25_ms", "p75_ms"} <= set(row["candidate"]) and {"median_ms", "p25_ms"} <= set(row["eager"])
    assert timed["environment"]["gpu"] == "NVIDIA H200" and untimed["timing"] is None


def test_evidence_that_does_not_validate_is_never_accepted_and_stops_nothing():
    """A forged reply from a candidate's process can put anything in its part of the evidence."""
    forged = Verdict.accept("correct", task="t.py", candidate="c.py", backend="triton",
                            resources={"kernel\x1b[2J" + "k" * 100: {"registers": "many"}})
    assert forged.verdict == "rejected" and forged.reason is Reason.CRASHED
    assert forged.candidate == "c.py" and "resources." in forged.detail and "\x1b" not in forged.detail
    kept = Verdict.reject(Reason.CHEAT_SUSPECTED, "timed outputs differ", timing={"cases": [{"case": 0}]})
    assert kept.reason is Reason.CHEAT_SUSPECTED and kept.detail.startswith("timed outputs differ (")
    assert Verdict.reject("bogus", "d").reason is Reason.CRASHED
    assert Verdict.accept("d", environment={"capability": "9.0; rm -rf"}).reason is Reason.CRASHED
    with pytest.raises(ValidationError, match="accepted goes with 'ok'"):
        Verdict(verdict="rejected", reason="ok", detail="d")


def test_what_producers_change_after_building_a_verdict():
    """The timing judge turns a caught rejection into cheat_suspected; the session adds the total time."""
    overhead = Overhead()
    verdict = Verdict.reject(Reason.INCORRECT, "case 0 differs", overhead=overhead)
    verdict.reason = Reason.CHEAT_SUSPECTED.value
    verdict.overhead["total_s"] = 1.5
    overhead["peak_host_memory_mb"] = 12  # an Overhead handed in is the verdict's own, as the dict used to be
    assert verdict.reason is Reason.CHEAT_SUSPECTED and f"{verdict.reason}" == "cheat_suspected"
    assert verdict.to_dict()["overhead"] == {"total_s": 1.5, "peak_host_memory_mb": 12.0}
    with pytest.raises(ValidationError):
        verdict.overhead["total_s"] = "soon"


def test_values_of_a_case_are_tensors_or_scalars():
    verdict = Verdict.reject(Reason.INCORRECT, "d", correctness={"cases": [{"case": 0, "inputs": [
        {"shape": [4, 8], "dtype": "torch.bfloat16"}, {"type": "float", "value": 1e-6}, {"type": "bool", "value": True},
        {"type": "list", "value": None}]}]})
    tensor, eps, flag, other = verdict.correctness.cases[0].inputs
    assert isinstance(tensor, TensorSpec) and tensor.short_dtype == "bfloat16"
    assert isinstance(eps, ScalarSpec) and eps.value == 1e-6 and flag.value is True and other.value is None
    assert verdict.correctness.cases[0].shapes == "4x8"


@pytest.mark.gpu
def test_a_real_gpu_verdict_round_trips_with_its_timings_and_trace():
    verdict, logged = evaluated(TASKS / "softmax.py", HONEST / "softmax_online.py", "cuda", timing_trials=20,
                                baselines=("eager", "compile_default"))
    assert verdict.accepted and logged == [], (verdict.detail, logged)
    assert Verdict.from_dict(json.loads(verdict.to_json())) == verdict
    row = verdict.timing.cases[0]
    assert row.candidate.median_ms > 0 and row.candidate.host_median_ms is not None and row.eager is not None
    assert row.speedup_vs_eager and verdict.timing.geomean_speedup_vs_best and verdict.timing.copy_bandwidth_gbps
    assert verdict.environment.capability_tuple and verdict.environment.gpu and verdict.resources
    assert verdict.overhead.time_s is not None and verdict.overhead.time_phases
    assert verdict.trace is not None and verdict.trace.windows and verdict.trace.kernels
    revalidated = [c for case in verdict.correctness.cases for c in case.checks
                   if c.phase == "timed-call re-validation"]
    assert revalidated and all(c.ok for c in revalidated)  # outputs of timed trials themselves, judged


def test_the_kernel_trace_summary_has_a_field_for_every_entry():
    """The trace checks' summary (GPU) lands in ``trace``; an entry the model has no field for yet is kept, and
    this test says which one to add."""
    from evaluator.trace_checks import summary
    from evaluator.tracing.judge import Finding, FindingKind, Judgement, Severity, TrialTiming

    finding = Finding(FindingKind.BOOKKEEPING, Severity.INFO, "a small library kernel took 1% of a call")
    judgement = Judgement(findings=(finding,), windows=(), trial_timings=(TrialTiming(0, 0.10, 0.09, 0.1, 2),),
                          outside=3)
    produced = summary(judgement, [finding], "timing")
    verdict = Verdict.reject(Reason.CHEAT_SUSPECTED, "kernel trace [timing]: ...", trace=produced)
    assert verdict.reason is Reason.CHEAT_SUSPECTED and not verdict.trace.__pydantic_extra__, verdict.trace
    assert verdict.trace.trials == 1 and verdict.trace.traced_over_timed_median == pytest.approx(0.9)
    assert verdict.trace.findings[0].kind == "bookkeeping" and verdict.to_dict()["trace"] == produced


def test_a_sandboxed_process_account_of_its_phases_is_kept_only_as_bounded_numbers():
    """A candidate's process may say anything about where its time went: the parent keeps named finite numbers
    (at most 16) and the request loop's own measure, and a hostile reply cannot break the verdict's model."""
    from evaluator.calls import reported_phases
    from evaluator.verdict import Overhead

    reply = {"phases": {"import_s": 0.5, "x" * 100: 1, "bad": "1.0", "nan": float("nan"), **{f"p{i}": i for i in
                                                                                            range(30)}},
             "seconds": 2.25}
    phases = reported_phases(reply)
    assert phases["import_s"] == 0.5 and phases["x" * 40] == 1.0 and phases["worker_s"] == 2.25
    assert "bad" not in phases and "nan" not in phases and len(phases) <= 17
    assert reported_phases({"phases": ["not", "a", "dict"]}) == {}
    assert reported_phases({"startup_phases": {"a_s": 1}}, "startup_phases") == {"a_s": 1.0}
    overhead = Overhead()
    overhead["check_phases"] = phases  # validates: every value a float
    assert overhead.check_phases["import_s"] == 0.5


def test_the_summary_says_small_inputs_only_where_the_task_has_them(cpu_run):
    from kernelevo.search.progress import scope_lines

    verdict, _ = cpu_run
    source = (HONEST / "softmax_online.py").read_text()
    said = "\n".join(scope_lines(verdict, source, "cpu"))
    assert "only the op's small_inputs were checked" in said
    scored = verdict.model_copy(update={"correctness": verdict.correctness.model_copy(update={"small_cases": False})})
    assert "small_inputs" not in "\n".join(scope_lines(scored, source, "cpu"))  # a task with no small cases
