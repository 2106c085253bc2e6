"""Fitness of a candidate, read from its verdict.

Fitness is the geometric-mean speedup over the better of eager and torch.compile across cases
(``timing.geomean_speedup_vs_best``), 0 when rejected. On CPU nothing is timed, so an accepted
candidate scores 1.0: the search still separates correct kernels from broken ones, and the run says
plainly that speed needs a GPU.

Every function takes a :class:`~evaluator.verdict.Verdict`; callers that hold a verdict as JSON (a job record,
an archive line) may pass that, and it is validated here, at the edge.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from evaluator.verdict import Verdict

UNTIMED_ACCEPTED_FITNESS = 1.0

VerdictLike = Verdict | Mapping[str, Any] | None


def is_accepted(verdict: VerdictLike) -> bool:
    """True when the evaluator accepted the candidate."""
    v = Verdict.coerce(verdict)
    return v is not None and v.accepted


def is_timed(verdict: VerdictLike) -> bool:
    """True when the verdict carries GPU timings (so fitness is a real speedup)."""
    v = Verdict.coerce(verdict)
    return v is not None and v.timed


def _positive(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) and value > 0 else None


def fitness_of(verdict: VerdictLike) -> float:
    """The search's score for one verdict: geomean speedup vs the best baseline, 1.0 untimed, 0 rejected."""
    v = Verdict.coerce(verdict)
    if v is None or not v.accepted:
        return 0.0
    if v.timing is None:
        return UNTIMED_ACCEPTED_FITNESS
    return _positive(v.timing.geomean_speedup_vs_best) or 0.0


def speedups(verdict: VerdictLike) -> tuple[float | None, float | None]:
    """Geomean speedups (vs eager, vs torch.compile) of a timed verdict; ``(None, None)`` when untimed."""
    v = Verdict.coerce(verdict)
    if v is None or v.timing is None:
        return None, None
    return _positive(v.timing.geomean_speedup_vs_eager), _positive(v.timing.geomean_speedup_vs_compile)
