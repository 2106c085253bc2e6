"""Build a :class:`~kernelevo.report.model.Report` from what a run recorded.

Two sources, one pure builder (:func:`build`): a run directory (``run.json``, ``summary.json``,
``archive.jsonl``, ``target.json``, ``best/``; see :mod:`kernelevo.search.rundir`) and a job's result (the
search's ``summary.json`` as the worker tier stores it, without the per-candidate archive unless it was restored).
:class:`RunRecords` is what both read into; :func:`build` decides everything else. Derived figures (a speedup
against one torch.compile mode, the worst error over a case's calls, rejections counted by reason) are computed
from recorded ones exactly as the verifier computes its own.
"""

from __future__ import annotations

import json
import shlex
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from evaluator.verdict import CaseEvidence, Environment, Reason, SanitizerResult, TimingCase, Verdict
from kernelevo.report.assess import assess, conservative_speedup
from kernelevo.report.model import (
    Baseline,
    CaseCorrectness,
    CaseTiming,
    CorrectnessSummary,
    Failure,
    LineageStep,
    OpInfo,
    Point,
    Report,
    SearchCost,
    Status,
    TimingSummary,
    Winner,
)
from kernelevo.search.result import BestCandidate, SearchResult
from kernelevo.search.rundir import RunDir

MAX_FAILURE_EXAMPLES = 3
REVALIDATION = "timed-call re-validation"  # the phase of a check that re-judged a timed call's outputs


class RecordsError(ValueError):
    """The records at hand are not a run (which file, what is wrong, what to do)."""


class RunRecords(BaseModel):
    """What a run recorded, as plain JSON: the summary (``SearchResult.to_dict()``, ``best`` included), and where
    they exist the run's ``run.json``, ``target.json``, the archive's lines and a job's error."""

    model_config = ConfigDict(frozen=True)

    summary: dict[str, Any]
    meta: dict[str, Any] = {}
    target: dict[str, Any] = {}
    archive: list[dict[str, Any]] | None = None
    error: str | None = None
    run_dir: str | None = None


# -- reading --------------------------------------------------------------------------------------------------------

def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError) as exc:
        raise RecordsError(f"{path}: not readable JSON ({exc}); the run's files were damaged or are still being"
                           " written") from None


def read_run_dir(path: Path) -> RunRecords:
    """The records of the run directory ``path`` (an unfinished run: the archive and ``best/`` so far)."""
    run = RunDir(path)
    try:
        meta = run.read_meta()
    except (FileNotFoundError, ValueError) as exc:
        raise RecordsError(str(exc)) from None
    archive = run.candidates()
    summary = _read_json(run.summary_path)
    if not isinstance(summary, dict):
        summary = _unfinished_summary(run, meta, archive)
    target = _read_json(path / "target.json")
    return RunRecords(summary=summary, meta=meta, target=target if isinstance(target, dict) else {},
                      archive=archive, run_dir=str(path))


def _unfinished_summary(run: RunDir, meta: dict[str, Any], archive: list[dict[str, Any]]) -> dict[str, Any]:
    """A summary from the archive and ``best/`` of a run that has not written ``summary.json`` (still running, or
    killed): the counts are the archive's, the stop reason says the run did not finish."""
    verdict = _read_json(run.best_dir / "verdict.json")
    info = _read_json(run.best_dir / "candidate.json") or {}
    kernel = run.best_dir / "kernel.py"
    best = None
    if isinstance(verdict, dict) and kernel.is_file():
        best = {"id": info.get("id", "best"), "source": kernel.read_text(encoding="utf-8"), "verdict": verdict,
                "fitness": info.get("fitness", 0.0)}
    judged = [r for r in archive if r.get("kind") == "evaluated"]
    return {"op_id": meta.get("op_id", "?"), "run_dir": str(run.path), "device": meta.get("device", "cpu"),
            "stop_reason": "unfinished (no summary.json: the run is still going or was stopped)", "best": best,
            "candidates_evaluated": len(judged), "candidates_accepted": sum(bool(r.get("accepted")) for r in judged),
            "tokens_in": sum(int(r.get("tokens_in") or 0) for r in archive),
            "tokens_out": sum(int(r.get("tokens_out") or 0) for r in archive),
            "cost_usd": sum(float(r.get("cost_usd") or 0.0) for r in archive),
            "started": meta.get("created"), "budget": meta.get("budget"), "seed": meta.get("seed")}


def records_from_json(data: Any, where: str = "the JSON") -> RunRecords:
    """Records from one JSON document: a search result (``summary.json``, ``--json-lines``' last line), a job
    record (``kernelevo jobs show --json``) or a benchmark result (``bench/results/search_*``)."""
    if not isinstance(data, dict):
        raise RecordsError(f"{where}: expected a JSON object (a search result, job record or run directory)")
    if isinstance(data.get("spec"), dict) and "state" in data:  # a job record
        spec, result = data["spec"], data.get("result") or {}
        best = ({"id": str(result.get("best_id") or "best"), "source": result["best_source"],
                 "verdict": result.get("verdict"), "fitness": result.get("best_fitness", 0.0)}
                if result.get("best_source") else None)
        summary = {"op_id": spec.get("op_id", "?"), "device": spec.get("device", "cpu"),
                   **(result.get("summary") or {}), "stop_reason": result.get("stop_reason", data["state"]),
                   "best": best}
        meta = {"op_id": spec.get("op_id"), "backend": spec.get("backend"), "device": spec.get("device"),
                "seed": spec.get("seed"), "proposer": spec.get("proposer"), "commit": spec.get("commit_sha"),
                "budget": spec.get("budgets") or {}, "config": _mapping(spec.get("shape")) or None}
        return RunRecords(summary=summary, meta={k: v for k, v in meta.items() if v is not None},
                          error=data.get("error"))
    if isinstance(data.get("search"), dict) and "best" in data:  # a benchmark result
        summary = {**data["search"], "best": data["best"]}
        meta = {"op_id": summary.get("op_id"), "budget": data.get("budget"), "seed": data.get("seed"),
                "proposer": data.get("proposer"), "config": data.get("config")}
        return RunRecords(summary=summary, meta={k: v for k, v in meta.items() if v is not None})
    if "stop_reason" in data and "best" in data:
        return RunRecords(summary=data)
    raise RecordsError(f"{where}: neither a search result, a job record nor a benchmark result (no 'stop_reason'"
                       " and 'best'); pass a run directory or its summary.json")


def read_records(path: Path) -> RunRecords:
    """A run directory's records, or those of a JSON file (see :func:`records_from_json`)."""
    path = Path(path)
    if path.is_dir():
        return read_run_dir(path)
    if not path.is_file():
        raise RecordsError(f"{path}: no such run directory or file")
    return records_from_json(_read_json(path), str(path))


# -- building -------------------------------------------------------------------------------------------------------

def build(records: RunRecords, *, kernel_dir: str | None = None, kernel_path: str | None = None) -> Report:
    """The report of ``records``. ``kernel_dir``: where the winner is stored in the repository (``kernels/<op>``),
    for the reproduce commands; ``kernel_path``: where a reader finds the winner's source (default: a run
    directory's ``best/kernel.py``)."""
    raw = {**_SUMMARY_DEFAULTS, **records.summary}
    if isinstance(raw["best"], dict):  # a job's result names no candidate id (workflows keeps source and verdict)
        raw["best"] = {"id": "best", **raw["best"]}
    summary = SearchResult.from_dict(raw)
    meta = records.meta
    try:
        best = summary.best_candidate
    except ValidationError as exc:
        raise RecordsError(f"the winner in the records does not validate ({exc.error_count()} problems,"
                           f" first: {exc.errors()[0]['loc']}): the records were damaged or come from a newer"
                           " KernelEvo; update KernelEvo and render again") from None
    verdict = best.verdict if best is not None else None
    if verdict is not None and not verdict.accepted:
        best, verdict = None, None
    op = _op(summary.op_id or str(meta.get("op_id") or "?"), records.target)
    archive = records.archive
    assessment = assess(verdict, summary.stop_reason)
    status = _status(verdict, assessment.publish, records.error)
    environment = verdict.environment if verdict is not None else Environment.model_validate(
        summary.environment or {})
    device = verdict.device if verdict is not None else str(meta.get("device") or summary.device)
    backend = verdict.backend if verdict is not None else str(meta.get("backend") or "unknown")
    by_id = {str(r.get("id")): r for r in archive or []}
    if kernel_path is None and records.run_dir and (Path(records.run_dir) / "best" / "kernel.py").is_file():
        kernel_path = str(Path(records.run_dir) / "best" / "kernel.py")  # a local run: where its winner is
    headline = f"the job failed: {records.error}" if status is Status.FAILED and records.error else assessment.reason
    return Report(
        status=status, headline=headline, op=op, device=device, backend=backend,
        proposer=meta.get("proposer"), run_dir=records.run_dir or (summary.run_dir or None),
        started=summary.started or None, ended=summary.ended or None,
        winner=_winner(best, verdict, by_id.get(best.id) if best else None, kernel_path) if best and verdict else None,
        timing=_timing(verdict) if verdict is not None else None,
        timing_note=verdict.timing_note if verdict is not None else "",
        note=summary.note, correctness=_correctness(verdict, summary) if verdict is not None else None,
        environment=environment, cost=_cost(summary, meta, archive),
        timeline=_timeline(archive) if archive is not None else None,
        lineage=_lineage(best.id, by_id) if best is not None and archive is not None else None,
        failure=_failure(summary, archive, records.error) if status is Status.FAILED else None,
        reproduce=_reproduce(op, {**records.summary, **meta}, records.run_dir, kernel_dir, device, backend),
    )


_SUMMARY_DEFAULTS: dict[str, Any] = {
    "op_id": "", "run_dir": "", "stop_reason": "unknown", "best": None, "candidates_evaluated": 0,
    "candidates_accepted": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0, "evaluator_busy_fraction": None,
    "baselines": None, "started": "", "ended": "", "time_to_first_accepted_s": None,
}


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _status(verdict: Verdict | None, publish: bool, error: str | None) -> Status:
    if verdict is None or error:
        return Status.FAILED
    if verdict.timing is None:
        return Status.NOT_TIMED
    return Status.IMPROVED if publish else Status.NO_IMPROVEMENT


def _op(op_id: str, target: dict[str, Any]) -> OpInfo:
    info = _mapping(target.get("op"))
    path, _, qualname = op_id.partition("::")
    line = info.get("line")
    return OpInfo(op_id=op_id, path=str(info.get("path") or path) or None,
                  qualname=str(info.get("qualname") or qualname) or None,
                  line=line if isinstance(line, int) else None, source_hash=info.get("source_hash"))


def _winner(best: BestCandidate, verdict: Verdict, record: dict[str, Any] | None,
            kernel_path: str | None) -> Winner:
    record = record or {}
    generation = record.get("generation")
    return Winner(id=best.id, backend=verdict.backend, device=verdict.device, fitness=best.fitness,
                  detail=verdict.detail, generation=generation if isinstance(generation, int) else None,
                  operator=record.get("operator"), strategy=record.get("strategy"), model=record.get("model"),
                  flags=list(verdict.flags), kernels=dict(verdict.resources),
                  source_lines=len(best.source.splitlines()), kernel_path=kernel_path)


def _case_timing(row: TimingCase, shapes: str) -> CaseTiming:
    baselines = {b: s for b in Baseline if (s := getattr(row, b.value)) is not None}
    kernel_ms = row.candidate.median_ms
    speedups = {b: s.median_ms / kernel_ms for b, s in baselines.items() if kernel_ms > 0 and s.median_ms > 0}
    return CaseTiming(case=row.case, shapes=shapes, kernel=row.candidate, baselines=baselines, speedups=speedups,
                      floor_ms=row.floor_ms, roofline_fraction=row.roofline_fraction)


def _timing(verdict: Verdict) -> TimingSummary | None:
    timing = verdict.timing
    if timing is None:
        return None
    shapes = {c.case: c.shapes for c in (verdict.correctness.cases if verdict.correctness else [])}
    return TimingSummary(cases=[_case_timing(row, shapes.get(row.case, "")) for row in timing.cases],
                         geomean_vs_eager=timing.geomean_speedup_vs_eager,
                         geomean_vs_compile=timing.geomean_speedup_vs_compile,
                         geomean_vs_best=timing.geomean_speedup_vs_best,
                         conservative_vs_best=conservative_speedup(timing),
                         copy_bandwidth_gbps=timing.copy_bandwidth_gbps, matmul_tflops=timing.matmul_tflops,
                         method=timing.method, baseline_notes=dict(timing.baseline_notes))


def _worst(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def _case_correctness(case: CaseEvidence) -> CaseCorrectness:
    return CaseCorrectness(case=case.case, shapes=case.shapes, calls=len(case.checks),
                           failed=sum(not c.ok for c in case.checks),
                           worst_abs_err=_worst([c.max_abs_err for c in case.checks]),
                           worst_rel_err=_worst([c.max_rel_err for c in case.checks]), tolerance=case.tolerance)


def _correctness(verdict: Verdict, summary: SearchResult) -> CorrectnessSummary | None:
    evidence = verdict.correctness
    if evidence is None:
        return None
    cases = [_case_correctness(c) for c in evidence.cases]
    findings = [f"{f.severity}: {f.message}" for f in (verdict.trace.findings if verdict.trace else [])]
    sanitizer = [SanitizerResult.model_validate(run) for run in summary.sanitizer]
    return CorrectnessSummary(
        cases=cases, seeds=evidence.seeds, distributions=list(evidence.distributions),
        calls=sum(c.calls for c in cases), failed=sum(c.failed for c in cases),
        revalidations=sum(check.phase == REVALIDATION for case in evidence.cases for check in case.checks),
        worst_abs_err=_worst([c.worst_abs_err for c in cases]), worst_rel_err=_worst([c.worst_rel_err for c in cases]),
        reference_precision=evidence.reference_precision, checks=list(evidence.checks),
        static_enforced=verdict.static.enforced, kernels_launched=list(verdict.static.launched),
        trace_findings=findings, sanitizer=sanitizer)


def _reason(record: dict[str, Any]) -> Reason | None:
    verdict = record.get("verdict")
    raw = verdict.get("reason") if isinstance(verdict, dict) else record.get("reason")
    try:
        return Reason(raw) if raw is not None else None
    except ValueError:
        return None


def _judged(archive: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in archive if r.get("kind", "evaluated") == "evaluated"]


def _cost(summary: SearchResult, meta: dict[str, Any], archive: list[dict[str, Any]] | None) -> SearchCost:
    rejected = None
    if archive is not None:
        counts: Counter[Reason] = Counter(reason for r in _judged(archive) if not r.get("accepted")
                                          and (reason := _reason(r)) is not None and reason is not Reason.OK)
        rejected = {reason: counts[reason] for reason in Reason if counts[reason]}
    elif isinstance(summary.rejections, dict):  # a job's result: the search counted them from its archive
        counted = {reason: summary.rejections.get(reason.value) for reason in Reason if reason is not Reason.OK}
        rejected = {reason: n for reason, n in counted.items() if isinstance(n, int) and not isinstance(n, bool)
                    and n > 0}
    on_gpu = summary.device.startswith("cuda")
    elapsed = summary.elapsed_s or None
    return SearchCost(
        stop_reason=summary.stop_reason, candidates_evaluated=summary.candidates_evaluated,
        candidates_accepted=summary.candidates_accepted, rejected=rejected,
        duplicates=summary.duplicates if archive is not None or summary.generations else None,
        proposal_errors=summary.proposal_errors if archive is not None or summary.generations else None,
        generations=summary.generations or None, tokens_in=summary.tokens_in, tokens_out=summary.tokens_out,
        cost_usd=summary.cost_usd, unpriced_models=list(summary.unpriced_models), elapsed_s=elapsed,
        gpu_minutes=elapsed / 60 if on_gpu and elapsed is not None else None,
        evaluator_busy_fraction=summary.evaluator_busy_fraction,
        time_to_first_accepted_s=summary.time_to_first_accepted_s, proposer=meta.get("proposer"))


def _timeline(archive: list[dict[str, Any]]) -> list[Point]:
    points, tokens = [], 0
    for record in archive:
        tokens += int(record.get("tokens_in") or 0) + int(record.get("tokens_out") or 0)
        if record.get("kind", "evaluated") != "evaluated":
            continue
        elapsed = record.get("run_elapsed_s")
        points.append(Point(id=str(record.get("id")), elapsed_s=float(elapsed) if elapsed is not None else None,
                            tokens=tokens, fitness=float(record.get("fitness") or 0.0),
                            accepted=bool(record.get("accepted")), reason=_reason(record)))
    return points


def _lineage(winner_id: str, by_id: dict[str, dict[str, Any]]) -> list[LineageStep]:
    """The winner's ancestry through first parents, root first (stops at a cycle or a parent not recorded)."""
    chain: list[LineageStep] = []
    seen: set[str] = set()
    current: str | None = winner_id
    while current is not None and current in by_id and current not in seen:
        seen.add(current)
        record = by_id[current]
        if record.get("kind") == "duplicate" and record.get("duplicate_of") in by_id:
            current = str(record["duplicate_of"])
            continue
        generation = record.get("generation")
        chain.append(LineageStep(id=current, generation=generation if isinstance(generation, int) else None,
                                 operator=record.get("operator"), strategy=record.get("strategy"),
                                 fitness=float(record.get("fitness") or 0.0), accepted=bool(record.get("accepted"))))
        parents = record.get("parent_ids") or []
        current = str(parents[0]) if parents else None
    return chain[::-1]


_TRIES: dict[Reason, str] = {
    Reason.COMPILE_ERROR: "the candidates did not compile: check the Triton/CUDA versions on the worker and the"
                          " proposer's model (an LLM proposer needs one that writes working Triton)",
    Reason.INCORRECT: "the candidates computed something else: check the op's reference on the shapes of its"
                      " cases (small_inputs) and that its dtype handling is what you want",
    Reason.STATIC_VIOLATION: "the candidates broke the static rules (docs/verifier.md): with an LLM proposer, the"
                             " rule's message is in its next prompt; a larger budget gives it room",
    Reason.CHEAT_SUSPECTED: "the verifier caught candidates gaming it: nothing to fix in your op; a different"
                            " proposer or model may do better",
    Reason.CRASHED: "the candidates crashed: the details below name the case; an op with very large inputs may need"
                    " a worker with more memory",
    Reason.TIMEOUT: "the candidates ran out of time: smaller small_inputs, or a larger --budget-minutes",
    Reason.TOO_SLOW: "the candidates were correct but slower than the baselines: the op may be memory bound and"
                     " already well served by torch.compile",
}


def _failure(summary: SearchResult, archive: list[dict[str, Any]] | None, error: str | None) -> Failure:
    if error:
        return Failure(what=f"the job did not finish: {error}",
                       tries=["run it again (/kernelevo optimize, or kernelevo optimize locally with --device cpu to"
                              " see the verifier's verdicts)"])
    what = f"no candidate passed verification; the search stopped: {summary.stop_reason}"
    if archive is None:
        return Failure(what=what, tries=["render the run directory (kernelevo report RUN_DIR) for every verdict"])
    rejected = [(reason, r) for r in _judged(archive) if (reason := _reason(r)) not in (None, Reason.OK)]
    order = [reason for reason, _ in Counter(reason for reason, _ in rejected).most_common()]
    tries = [_TRIES[reason] for reason in order if reason in _TRIES]
    if not archive:
        tries.append("no candidate was judged: check the proposer (its errors are in proposals.jsonl) and the budget")
    examples = []
    for reason in order[:MAX_FAILURE_EXAMPLES]:
        record = next(r for why, r in rejected if why is reason)
        verdict = _mapping(record.get("verdict"))
        examples.append(f"{record.get('id')}: {reason}: {verdict.get('detail', '')}")
    return Failure(what=what, tries=tries, examples=examples)


def _flag(name: str, value: Any) -> list[str]:
    return [] if value is None else [name, str(value)]


def _reproduce(op: OpInfo, meta: dict[str, Any], run_dir: str | None, kernel_dir: str | None, device: str,
               backend: str) -> list[str]:
    """Shell commands (every value quoted) that re-check the winner and run the search again; ``meta`` is
    ``run.json`` over the summary (both carry the budget and the seed)."""
    kind = "cuda" if device.startswith("cuda") else "cpu"
    commands = []
    if kernel_dir:
        commands.append(shlex.join(["kernelevo", "verify", kernel_dir]))
    if run_dir and (Path(run_dir) / "best" / "kernel.py").is_file() and meta.get("task_path"):
        task = str(meta["task_path"])
        if op.path and Path(task).is_absolute() and Path(task).as_posix().endswith("/" + op.path):
            task = op.path  # the op's own file: named from the repository's root, like the search command below
        commands.append(shlex.join(["kernelevo", "eval", "--task", task, "--candidate",
                                    str(Path(run_dir) / "best" / "kernel.py"), "--device", kind]))
    budget = _mapping(meta.get("budget"))
    argv = ["kernelevo", "optimize", op.path or op.op_id, "--op", op.op_id, "--backend",
            str(meta.get("backend") or (backend if backend in ("triton", "cuda") else "any")), "--device", kind,
            *_flag("--seed", meta.get("seed")),
            *_flag("--budget-candidates", budget.get("candidates")), *_flag("--budget-minutes", budget.get("minutes")),
            *_flag("--budget-tokens", budget.get("tokens")), *_flag("--budget-usd", budget.get("usd")),
            *_flag("--plateau", budget.get("plateau_generations")),
            *_flag("--generation-size", _mapping(meta.get("config")).get("generation_size"))]
    if meta.get("proposer") in ("offline", "llm"):
        argv += ["--proposer", str(meta["proposer"])]
    prefix = f"git checkout {shlex.quote(str(meta['commit']))} && " if meta.get("commit") else ""
    commands.append(prefix + shlex.join(argv))
    return commands
