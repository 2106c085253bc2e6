"""Reports for reviewers: does the winner beat the baselines beyond noise, and the Markdown saying so.

:func:`assess` is the one place that decides whether a search result is worth a follow-up PR; the
Jinja2 templates in ``bot/templates`` render the report, the PR body, the check-run summary and the
status comment from plain dicts (a search result is a JSON-able dict: ``best.verdict`` is an
evaluator verdict dict).
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import quote

import jinja2

MIN_GAIN = 0.03  # geomean speedup over the best baseline must exceed 1 + MIN_GAIN ...
BASELINES = ("eager", "compile_default", "compile_max_autotune")


@dataclass(frozen=True)
class Assessment:
    """Whether to publish, and the sentence that says why (shown to users either way)."""

    publish: bool
    reason: str


def _geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def conservative_speedup(timing: dict[str, Any]) -> float | None:
    """Geomean over cases of (best baseline's p25) / (candidate's p75): the speedup that survives
    the measured spread. Above 1 means the candidate is faster even in its slow quartile."""
    ratios = []
    for case in timing.get("cases") or []:
        cand = (case.get("candidate") or {}).get("p75_ms")
        baselines = [(case.get(b) or {}).get("p25_ms") for b in BASELINES]
        fastest = [f for f in baselines if f]
        if not cand or not fastest:
            return None
        ratios.append(min(fastest) / cand)
    return _geomean(ratios)


def assess(result: dict[str, Any] | None, min_gain: float = MIN_GAIN) -> Assessment:
    """Decide whether a search result beats the baselines beyond noise."""
    best = (result or {}).get("best")
    if not best:
        stop = (result or {}).get("stop_reason", "unknown")
        return Assessment(False, f"no candidate passed verification (search stopped: {stop})")
    verdict = best.get("verdict") or {}
    if verdict.get("verdict") != "accepted":
        return Assessment(False, f"the best candidate was not accepted: {verdict.get('detail', '')}")
    timing = verdict.get("timing")
    if not timing:
        return Assessment(False, "the winner was verified but not timed (no GPU), so there is no speed claim")
    speedup = timing.get("geomean_speedup_vs_best")
    if speedup is None or speedup <= 1.0 + min_gain:
        shown = f"{speedup:.2f}x" if speedup else "unknown"
        return Assessment(False, f"nothing beats eager and torch.compile by more than {min_gain:.0%} "
                                 f"(best: {shown} over the faster baseline)")
    robust = conservative_speedup(timing)
    if robust is not None and robust <= 1.0:
        return Assessment(False, f"the {speedup:.2f}x speedup is within the timing spread "
                                 f"(p25 of baseline vs p75 of candidate: {robust:.2f}x)")
    return Assessment(True, f"{speedup:.2f}x faster than the faster of eager and torch.compile (geomean)")


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("bot", "templates"), autoescape=False,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters["x"] = lambda v: "n/a" if v is None else f"{v:.2f}x"
    env.filters["ms"] = lambda v: "n/a" if v is None else f"{v:.4f}"
    env.filters["md"] = escape_md
    env.filters["code"] = code
    env.filters["marker"] = marker_value
    env.filters["fenced"] = fenced
    return env


def escape_md(text: Any) -> str:
    """Neutralise Markdown/HTML and @-mentions in text that came from users or candidates."""
    out = str(text)
    for ch in "\\`*_[]<>|!#~&":
        out = out.replace(ch, "\\" + ch)
    return out.replace("@", "@\u200b").replace("\n", " ")


def code(text: Any) -> str:
    """``text`` as a Markdown code span that stays one span (and one table cell) whatever it holds:
    op ids come from file paths, which a PR author chooses."""
    clean = str(text).replace("`", "'").replace("|", "\\|").replace("\n", " ").replace("\r", " ")
    return f"`{clean}`"


def marker_value(text: Any) -> str:
    """``text`` inside a hidden HTML comment (``<!-- ... -->``): percent-encoded, so it cannot end the comment."""
    return quote(str(text), safe="/:._")


def fenced(text: Any) -> str:
    """One line inside a fenced code block: no backticks (no closing fence) and no line breaks."""
    return str(text).replace("`", "'").replace("\r", " ").replace("\n", " ")


def render(template: str, **context: Any) -> str:
    """Render ``bot/templates/<template>`` with ``context``."""
    return _env().get_template(template).render(**context)


def report_context(repo: str, op_id: str, result: dict[str, Any], request: dict[str, Any],
                   kernel_dir: str) -> dict[str, Any]:
    """Everything the report and PR body templates need, flattened from a search result."""
    best = result.get("best") or {}
    verdict = best.get("verdict") or {}
    timing = verdict.get("timing") or {}
    cases = []
    for case in timing.get("cases") or []:
        cases.append({
            "case": case.get("case"),
            "candidate": case.get("candidate") or {},
            "eager": case.get("eager") or {},
            "compile": min((case.get(b) or {} for b in BASELINES[1:]),
                           key=lambda t: t.get("median_ms") or math.inf),
            "vs_eager": case.get("speedup_vs_eager"),
            "vs_compile": case.get("speedup_vs_compile"),
            "roofline": case.get("roofline_fraction"),
        })
    correctness = verdict.get("correctness") or {}
    checks = [(c.get("case"), s) for c in correctness.get("cases") or [] for s in c.get("checks") or []]
    return {
        "repo": repo, "op_id": op_id, "kernel_dir": kernel_dir, "request": request,
        "assessment": assess(result), "cases": cases,
        "verdict": {"backend": verdict.get("backend", "unknown"), "device": verdict.get("device", "unknown"),
                    "detail": verdict.get("detail", ""), "flags": verdict.get("flags") or []},
        "geomean_vs_eager": timing.get("geomean_speedup_vs_eager"),
        "geomean_vs_compile": timing.get("geomean_speedup_vs_compile"),
        "n_cases": len(correctness.get("cases") or []), "n_checks": len(checks),
        "max_abs_err": max((s.get("max_abs_err") or 0 for _, s in checks), default=None),
        "max_rel_err": max((s.get("max_rel_err") or 0 for _, s in checks), default=None),
        "environment": verdict.get("environment") or {},
        "timing_note": verdict.get("timing_note", ""),
        "cost": {k: result.get(k) for k in ("candidates_evaluated", "candidates_accepted", "tokens_in",
                                            "tokens_out", "cost_usd", "evaluator_busy_fraction", "started",
                                            "ended", "stop_reason")},
        "reproduce": (f"git checkout {shlex.quote(request.get('head_sha', 'HEAD'))} && kernelevo optimize "
                      f"{shlex.quote(op_id.partition('::')[0])} --op {shlex.quote(op_id)} "
                      f"--backend {shlex.quote(request.get('backend', 'any'))}"
                      + (f" --budget-tokens {request['budget_tokens']}" if request.get("budget_tokens") else "")),
        "verify": f"kernelevo verify {shlex.quote(kernel_dir)}",
    }
