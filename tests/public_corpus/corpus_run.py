"""Evaluating the public corpus: build each entry's candidate, run it through the verifier, and say whether the
verifier answered what an honest, correct kernel deserves.

Shared by ``test_public_corpus.py`` and ``bench/public_corpus.py``. The decision (:func:`judge`) is a pure
function of the entry, the device and what the verifier said; :func:`evaluate_group` is the I/O edge (one
``EvaluationSession`` per task).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from pathlib import Path

import corpus_builder
from corpus_entries import ROOT, CpuExpectation, Entry
from pydantic import BaseModel

from evaluator.verdict import Correctness


class Answer(str, enum.Enum):
    """What the verifier (or the corpus itself) said about one entry."""

    ACCEPTED = "accepted"
    REJECTED = "rejected"
    NEEDS_GPU = "needs_gpu"  # NeedsGPU: exit status 2, "evaluate with --device cuda"
    SETUP_ERROR = "setup_error"  # any other EvalSetupError (exit status 2)
    NOT_BUILT = "not_built"  # the library is not installed, or its source cannot be pasted


class Finding(BaseModel):
    """One static violation, with the library line it points at."""

    rule: str
    line: int  # in the candidate
    origin: str  # "liger_kernel/ops/utils.py:253", "adapter" or "inserted by the paste"
    source_line: str
    message: str


class Outcome(BaseModel):
    """One entry on one device: what the verifier said, and whether that is what the entry deserves."""

    id: str
    library: str
    version: str | None
    module: str
    kernel: str
    task: str
    device: str
    static_checks: bool
    expected: Answer
    why_cpu: str = ""  # why the interpreter cannot run it, where that is expected
    answer: Answer
    reason: str = ""
    detail: str = ""
    first_origin: str = ""  # for a static rejection: where the first violation's line came from
    first_source_line: str = ""
    findings: list[Finding] = []
    shadowed: list[str] = []
    correctness: dict = {}

    @property
    def passed(self) -> bool:
        return self.answer == self.expected

    @property
    def false_reject(self) -> bool:
        """An honest, correct kernel refused: rejected outright, or a setup error where it should have run."""
        return self.answer in (Answer.REJECTED, Answer.SETUP_ERROR)


def expected(entry: Entry, device: str) -> Answer:
    """What an honest, correct kernel deserves: accepted, or on a CPU 'needs --device cuda' where the
    interpreter cannot run it."""
    if device == "cpu" and entry.cpu == CpuExpectation.NEEDS_GPU:
        return Answer.NEEDS_GPU
    return Answer.ACCEPTED


def findings(candidate: corpus_builder.Candidate, allow_torch: Iterable[str] = ()) -> list[Finding]:
    """Every static violation of the candidate, mapped back to the library line it comes from."""
    from evaluator.static_check import check_source

    report = check_source(candidate.source, "candidate.py", allow_torch=list(allow_torch))
    lines = candidate.source.splitlines()
    out = []
    if report.syntax_error is not None:
        return [Finding(rule="syntax-error", line=report.syntax_error.line, origin="", source_line="",
                        message=report.syntax_error.message)]
    for v in report.violations:
        text = lines[v.line - 1].strip() if 0 < v.line <= len(lines) else ""
        out.append(Finding(rule=v.rule, line=v.line, origin=candidate.origin(v.line), source_line=text,
                           message=v.message))
    return out


def build_all(entries: Iterable[Entry], folder: Path) -> dict[str, tuple[Path, corpus_builder.Candidate, str] | str]:
    """Write each entry's candidate under ``folder``; per id the file, candidate and version, or why not."""
    built: dict[str, tuple[Path, corpus_builder.Candidate, str] | str] = {}
    for entry in entries:
        try:
            candidate, version = entry.build()
        except corpus_builder.BuildError as exc:
            built[entry.id] = str(exc)
            continue
        path = folder / f"{entry.id}.py"
        path.write_text(candidate.source, encoding="utf-8")
        built[entry.id] = (path, candidate, version)
    return built


def judge(entry: Entry, device: str, static_checks: bool, version: str | None, answer: Answer, reason: str = "",
          detail: str = "", candidate: corpus_builder.Candidate | None = None,
          correctness: dict | None = None) -> Outcome:
    """The outcome record for what the verifier said (pure)."""
    found = findings(candidate) if candidate is not None else []
    first = found[0] if found and reason == "static_violation" else None
    return Outcome(
        id=entry.id, library=entry.library.distribution, version=version, module=entry.module, kernel=entry.kernel,
        task=entry.task, device=device, static_checks=static_checks, expected=expected(entry, device),
        why_cpu=entry.why_cpu if device == "cpu" else "", answer=answer, reason=reason, detail=detail,
        first_origin=first.origin if first else "", first_source_line=first.source_line if first else "",
        findings=found, shadowed=candidate.shadowed if candidate is not None else [], correctness=correctness or {})


def evaluate_group(task: Path, entries: list[Entry], built: dict, device: str, options,
                   ) -> tuple[list[Outcome], dict]:
    """Evaluate the entries of one task; also returns the session's environment (GPU, driver, torch, triton).

    Entries the static checks reject are answered by ``evaluator.evaluate`` (which starts no process for
    them); the others share one ``EvaluationSession``, so references and baselines are computed once."""
    from evaluator import EvalSetupError, EvaluationSession, NeedsGPU, evaluate

    outcomes: list[Outcome] = []
    in_session: list[Entry] = []
    for entry in entries:
        if isinstance(built[entry.id], str):
            outcomes.append(judge(entry, device, options.static_checks, entry.library.version(), Answer.NOT_BUILT,
                                  detail=built[entry.id]))
        elif options.static_checks and findings(built[entry.id][1]):
            path, candidate, version = built[entry.id]
            verdict = evaluate(task, path, device=device, options=options)
            answer = Answer.ACCEPTED if verdict.accepted else Answer.REJECTED
            outcomes.append(judge(entry, device, True, version, answer, verdict.reason, verdict.detail, candidate))
        else:
            in_session.append(entry)
    if not in_session:
        return outcomes, {}
    try:
        session = EvaluationSession(task, device=device, options=options)
    except Exception as exc:  # noqa: BLE001 - no sandbox, a broken task: every entry of the group records why
        for entry in in_session:
            outcomes.append(judge(entry, device, options.static_checks, built[entry.id][2], Answer.SETUP_ERROR,
                                  detail=f"{type(exc).__name__}: {exc}", candidate=built[entry.id][1]))
        return outcomes, {}
    with session:
        environment = session.environment
        for entry in in_session:
            path, candidate, version = built[entry.id]
            try:
                verdict = session.evaluate(path)
            except NeedsGPU as exc:
                outcomes.append(judge(entry, device, options.static_checks, version, Answer.NEEDS_GPU,
                                      detail=str(exc), candidate=candidate))
                continue
            except EvalSetupError as exc:
                outcomes.append(judge(entry, device, options.static_checks, version, Answer.SETUP_ERROR,
                                      detail=str(exc), candidate=candidate))
                continue
            answer = Answer.ACCEPTED if verdict.accepted else Answer.REJECTED
            outcomes.append(judge(entry, device, options.static_checks, version, answer, verdict.reason,
                                  verdict.detail, candidate, _correctness_summary(verdict.correctness)))
    return outcomes, environment


def _correctness_summary(correctness: Correctness | None) -> dict:
    """Per case of a verdict: the tolerance, how far eager's own error widened it, and the worst check (the
    per-seed detail stays in the verdict)."""
    cases = []
    for case in correctness.cases if correctness is not None else []:
        cases.append({"case": case.case, "tolerance": [t.model_dump(mode="json") for t in case.tolerance],
                      "widen_max": case.widen_max, "failed_checks": sum(not c.ok for c in case.checks),
                      "checks": len(case.checks),
                      "worst_rel_l2_err": max((c.rel_l2_err or 0.0 for c in case.checks), default=0.0),
                      "worst_max_abs_err": max((c.max_abs_err or 0.0 for c in case.checks), default=0.0)})
    return {"cases": cases} if cases else {}


def task_path(entry: Entry) -> Path:
    return ROOT / entry.task
