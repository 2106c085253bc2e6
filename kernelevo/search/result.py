"""Plain data the search hands back: progress snapshots and the final result (both JSON-able).

:class:`SearchResult` is also the body of ``summary.json`` and what job records and the bot read, so it stays JSON
(its ``best`` included); :attr:`SearchResult.best_candidate` is the typed view of ``best`` for code in-process.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from evaluator.verdict import Reason, Verdict


class BestCandidate(BaseModel):
    """The best candidate of a search: its id, source, verdict and fitness."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    source: str
    verdict: Verdict | None = None
    fitness: float = 0.0


@dataclass
class Progress:
    """A snapshot sent to ``on_progress`` after every candidate and every generation."""

    generation: int
    evaluated: int
    accepted: int
    best_fitness: float
    best_speedup_vs_eager: float | None
    best_speedup_vs_compile: float | None
    tokens: int
    cost_usd: float
    elapsed_s: float
    eta_s: float | None
    event: str = "candidate"  # "candidate" | "generation" | "done"
    timed: bool = False  # False on CPU: fitness 1.0 means "accepted", not a speedup
    last: dict[str, Any] | None = None  # the candidate just judged: id, operator, reason, fitness
    stop_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SearchResult:
    """What a search produced; also the body of ``summary.json``."""

    op_id: str
    run_dir: str
    stop_reason: str
    best: dict[str, Any] | None  # a BestCandidate as JSON: {"id", "source", "verdict", "fitness"}
    candidates_evaluated: int
    candidates_accepted: int
    tokens_in: int
    tokens_out: int
    cost_usd: float
    evaluator_busy_fraction: float | None  # time inside evaluations / elapsed (> 1 when they overlap)
    baselines: dict[str, Any] | None
    started: str
    ended: str
    time_to_first_accepted_s: float | None
    device: str = "cpu"
    timed: bool = False
    note: str = ""
    sanitizer: list[dict[str, Any]] = field(default_factory=list)  # compute-sanitizer runs of the winner (GPU)
    generations: int = 0
    elapsed_s: float = 0.0
    candidates_per_minute: float | None = None
    duplicates: int = 0
    proposal_errors: int = 0
    unpriced_models: list[str] = field(default_factory=list)
    stop_reasons: list[dict[str, Any]] = field(default_factory=list)  # one per session of the run
    environment: dict[str, Any] = field(default_factory=dict)  # GPU, driver, torch, triton (from the evaluator)
    # Judged candidates the verifier rejected, by Reason value (every session of the run); None: a summary written
    # before it was recorded, so a report says "not recorded" rather than "none rejected".
    rejections: dict[str, int] | None = None
    # Where the last session's wall time went, in seconds: session_start_s (reference process, inputs, baselines;
    # split into the session's own reference_start_s, load_s, baselines_s), search_s, sanitize_s.
    phases: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def best_candidate(self) -> BestCandidate | None:
        """``best``, validated (its verdict a :class:`~evaluator.verdict.Verdict`); None when nothing was accepted."""
        return BestCandidate.model_validate(self.best) if self.best else None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchResult:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


def rejection_counts(records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Judged candidates that were not accepted, counted by their verdict's :class:`Reason` value, in the enum's
    order (the archive's records: duplicates and proposer errors are not judged, so they are not counted). A
    reason this version does not know is left out rather than guessed."""
    counts: Counter[Reason] = Counter()
    for record in records:
        if record.get("kind", "evaluated") != "evaluated" or record.get("accepted"):
            continue
        verdict = record.get("verdict")
        raw = verdict.get("reason") if isinstance(verdict, Mapping) else record.get("reason")
        try:
            reason = Reason(raw)
        except ValueError:
            continue
        if reason is not Reason.OK:
            counts[reason] += 1
    return {reason.value: counts[reason] for reason in Reason if counts[reason]}
