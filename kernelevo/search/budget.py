"""Budgets of a search and the decision to stop: pure functions over counters, no clocks inside."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

# On a CPU nothing is timed and every accepted kernel scores 1.0: more generations cannot improve on the first
# accepted one, so a CPU search stops after this many generations without improvement unless told otherwise.
CPU_PLATEAU_GENERATIONS = 2

STOP_REASONS = (
    "budget_candidates",
    "budget_tokens",
    "budget_usd",
    "budget_time",
    "plateau",
    "proposer_exhausted",
    "cancelled",
)


@dataclass(frozen=True)
class Budget:
    """Limits of one search; None means unlimited. A run stops at the first limit it reaches."""

    candidates: int | None = 32  # candidates evaluated (duplicates and empty replies not counted)
    minutes: float | None = None  # wall time of the search across all sessions of the run
    tokens: int | None = None  # proposer tokens, input + output
    usd: float | None = None  # proposer money
    plateau_generations: int | None = 6  # generations without a better best fitness
    exhausted_generations: int = 3  # generations in a row with no new candidate at all

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Budget:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


@dataclass
class Usage:
    """What a run has spent so far."""

    candidates: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    elapsed_s: float = 0.0
    generations_without_improvement: int = 0
    generations_without_candidates: int = 0


def stop_reason(budget: Budget, usage: Usage, cancelled: bool = False) -> str | None:
    """The reason to stop now (one of STOP_REASONS), or None to go on."""
    if cancelled:
        return "cancelled"
    if budget.candidates is not None and usage.candidates >= budget.candidates:
        return "budget_candidates"
    if budget.tokens is not None and usage.tokens >= budget.tokens:
        return "budget_tokens"
    if budget.usd is not None and usage.cost_usd >= budget.usd:
        return "budget_usd"
    if budget.minutes is not None and usage.elapsed_s >= budget.minutes * 60:
        return "budget_time"
    if budget.plateau_generations is not None and usage.generations_without_improvement >= budget.plateau_generations:
        return "plateau"
    if usage.generations_without_candidates >= budget.exhausted_generations:
        return "proposer_exhausted"
    return None


def used_fraction(budget: Budget, usage: Usage) -> float | None:
    """The largest fraction spent of any limited resource (None when nothing is limited)."""
    fractions = []
    if budget.candidates:
        fractions.append(usage.candidates / budget.candidates)
    if budget.tokens:
        fractions.append(usage.tokens / budget.tokens)
    if budget.usd:
        fractions.append(usage.cost_usd / budget.usd)
    if budget.minutes:
        fractions.append(usage.elapsed_s / (budget.minutes * 60))
    return min(1.0, max(fractions)) if fractions else None


def eta_s(budget: Budget, usage: Usage) -> float | None:
    """Seconds left until the tightest budget runs out at the current rate (None when unknown)."""
    fraction = used_fraction(budget, usage)
    if fraction is None or fraction <= 0 or usage.elapsed_s <= 0:
        return None
    return usage.elapsed_s * (1 - fraction) / fraction
