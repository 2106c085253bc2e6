"""Fitness of a candidate, read from its verdict (plain dict, as stored in the archive).

Fitness is the geometric-mean speedup over the better of eager and torch.compile across cases
(``timing["geomean_speedup_vs_best"]``), 0 when rejected. On CPU nothing is timed, so an accepted
candidate scores 1.0: the search still separates correct kernels from broken ones, and the run says
plainly that speed needs a GPU.
"""

from __future__ import annotations

import math
from typing import Any

UNTIMED_ACCEPTED_FITNESS = 1.0


def is_accepted(verdict: dict[str, Any] | None) -> bool:
    """True when the evaluator accepted the candidate."""
    return bool(verdict) and verdict.get("verdict") == "accepted"


def is_timed(verdict: dict[str, Any] | None) -> bool:
    """True when the verdict carries GPU timings (so fitness is a real speedup)."""
    return bool(verdict) and bool(verdict.get("timing"))


def _positive(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number > 0 else None


def fitness_of(verdict: dict[str, Any] | None) -> float:
    """The search's score for one verdict: geomean speedup vs the best baseline, 1.0 untimed, 0 rejected."""
    if not is_accepted(verdict):
        return 0.0
    timing = verdict.get("timing")
    if not timing:
        return UNTIMED_ACCEPTED_FITNESS
    return _positive(timing.get("geomean_speedup_vs_best")) or 0.0


def speedups(verdict: dict[str, Any] | None) -> tuple[float | None, float | None]:
    """Geomean speedups (vs eager, vs torch.compile) of a timed verdict; ``(None, None)`` when untimed."""
    if not is_timed(verdict):
        return None, None
    timing = verdict["timing"]
    return _positive(timing.get("geomean_speedup_vs_eager")), _positive(timing.get("geomean_speedup_vs_compile"))
