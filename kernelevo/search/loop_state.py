"""The search loop's counters and per-generation bookkeeping (rebuilt identically on replay)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelevo.search.budget import Usage


@dataclass
class LoopState:
    """Counters of the run, rebuilt identically on replay."""

    usage: Usage = field(default_factory=Usage)
    tokens_in: int = 0
    tokens_out: int = 0
    accepted: int = 0
    duplicates: int = 0
    proposal_errors: int = 0
    generations: int = 0
    eval_s: float = 0.0
    first_accepted_s: float | None = None
    unpriced: set[str] = field(default_factory=set)
    replay_mismatches: int = 0
    slots_consumed: int = 0


@dataclass
class Consumption:
    """Replies consumed (and their spend) at the point a generation is planned from."""

    planned_pending: int
    slots: int
    tokens: int
    cost_usd: float


@dataclass
class Tally:
    """One generation's bookkeeping between its first submission and its close."""

    gen: int
    consumed: Consumption
    best_before: float = 0.0
    new_candidates: int = 0
    complete: bool = False  # every candidate submitted
