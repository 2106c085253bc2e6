"""Whether a search's winner beats the baselines beyond noise: the one decision behind "publish a follow-up PR"
and behind a report's headline (improved, no improvement, verified but not timed, nothing accepted)."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from evaluator.verdict import Timing, Verdict

MIN_GAIN = 0.03  # geomean speedup over the best baseline must exceed 1 + MIN_GAIN ...


class Assessment(BaseModel):
    """Whether to publish, and the sentence that says why (shown to users either way)."""

    model_config = ConfigDict(frozen=True)

    publish: bool
    reason: str


def _geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def conservative_speedup(timing: Timing) -> float | None:
    """Geomean over cases of (best baseline's p25) / (candidate's p75): the speedup that survives
    the measured spread. Above 1 means the candidate is faster even in its slow quartile."""
    ratios = []
    for case in timing.cases:
        cand = case.candidate.p75_ms
        fastest = [s.p25_ms for s in (case.eager, case.compile_default, case.compile_max_autotune)
                   if s is not None and s.p25_ms]
        if not cand or not fastest:
            return None
        ratios.append(min(fastest) / cand)
    return _geomean(ratios)


def assess(verdict: Verdict | None, stop_reason: str, min_gain: float = MIN_GAIN) -> Assessment:
    """Decide whether the winner (``verdict``; None when nothing was accepted) beats the baselines beyond noise."""
    if verdict is None:
        return Assessment(publish=False, reason=f"no candidate passed verification (search stopped: {stop_reason})")
    if not verdict.accepted:
        return Assessment(publish=False, reason=f"the best candidate was not accepted: {verdict.detail}")
    timing = verdict.timing
    if timing is None:
        return Assessment(publish=False,
                          reason="the winner was verified but not timed (no GPU), so there is no speed claim")
    speedup = timing.geomean_speedup_vs_best
    if speedup is None or speedup <= 1.0 + min_gain:
        shown = f"{speedup:.2f}x" if speedup else "unknown"
        return Assessment(publish=False, reason=f"nothing beats eager and torch.compile by more than {min_gain:.0%} "
                                                f"(best: {shown} over the faster baseline)")
    robust = conservative_speedup(timing)
    if robust is not None and robust <= 1.0:
        return Assessment(publish=False, reason=f"the {speedup:.2f}x speedup is within the timing spread "
                                                f"(p25 of baseline vs p75 of candidate: {robust:.2f}x)")
    return Assessment(publish=True, reason=f"{speedup:.2f}x faster than the faster of eager and torch.compile "
                                           "(geomean)")
