"""Feedback for the proposer: a verdict rendered as short, specific text.

What a kernel author needs to write the next version, and nothing else: why it was rejected (first
lines of a compile error, the failing case/seed with its error sizes, static violations with their
lines), and for accepted kernels the timings per case against each baseline and the roofline floor.
Pure: verdict dict in, text out; trimmed so that a prompt with several parents stays small.
"""

from __future__ import annotations

from typing import Any

MAX_CHARS = 2400
MAX_LOG_LINES = 14
MAX_ITEMS = 6


def _fmt(value: Any, digits: int = 3) -> str:
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _inputs(inputs: list[dict[str, Any]] | None) -> str:
    parts = []
    for item in inputs or []:
        if "shape" in item:
            parts.append(f"{tuple(item['shape'])} {str(item.get('dtype', '')).removeprefix('torch.')}".strip())
        else:
            parts.append(f"{item.get('type', '?')}={item.get('value')!r}")
    return ", ".join(parts) or "?"


def _tolerance(case: dict[str, Any]) -> str:
    tolerances = case.get("tolerance") or []
    first = tolerances[0] if tolerances and isinstance(tolerances[0], dict) else None
    if not first:
        return ""
    return "; tolerance " + " ".join(f"{k}={_fmt(v)}" for k, v in first.items())


def _static_lines(verdict: dict[str, Any]) -> list[str]:
    violations = (verdict.get("static") or {}).get("violations") or []
    lines = [
        f"  line {v.get('line', '?')}:{v.get('col', '?')} [{v.get('rule', '?')}] {v.get('message', '')}"
        for v in violations[:MAX_ITEMS]
    ]
    if len(violations) > MAX_ITEMS:
        lines.append(f"  ... and {len(violations) - MAX_ITEMS} more")
    return ["Static check violations:", *lines] if lines else []


def _correctness_lines(verdict: dict[str, Any]) -> list[str]:
    cases = (verdict.get("correctness") or {}).get("cases") or []
    failures, checked, worst_ok = [], 0, 0.0
    for case in cases:
        runs = case.get("checks") or []
        checked += len(runs)
        bad = [run for run in runs if not run.get("ok", True)]
        worst_ok = max([worst_ok, *(float(run.get("max_abs_err") or 0.0) for run in runs if run.get("ok", True))])
        if not bad:
            continue
        worst = max(bad, key=lambda run: float(run.get("rel_l2_err") or run.get("max_abs_err") or 0.0))
        where = ", ".join(str(worst[k]) for k in ("distribution", "phase") if worst.get(k))
        failures.append(
            f"  case {case.get('case')} (inputs {_inputs(case.get('inputs'))}{_tolerance(case)}):"
            f" {len(bad)} of {len(runs)} checks fail; worst: check {worst.get('check')}"
            + (f" ({where})" if where else "")
            + f": max_abs_err={_fmt(worst.get('max_abs_err'))} max_rel_err={_fmt(worst.get('max_rel_err'))}"
            f" rel_l2_err={_fmt(worst.get('rel_l2_err'))}"
        )
    if failures:
        more = [f"  ... and {len(failures) - MAX_ITEMS} more failing cases"] if len(failures) > MAX_ITEMS else []
        return ["Failing correctness checks:", *failures[:MAX_ITEMS], *more]
    if checked:
        return [f"Correct on {len(cases)} case(s), {checked} judged runs, max_abs_err={_fmt(worst_ok)}."]
    return []


def _baseline_ms(entry: Any) -> str:
    if isinstance(entry, dict) and entry.get("median_ms") is not None:
        return f"{_fmt(entry['median_ms'])} ms"
    return "n/a"


def _timing_lines(verdict: dict[str, Any]) -> list[str]:
    timing = verdict.get("timing")
    if not timing:
        note = verdict.get("timing_note")
        return [f"Timing: {note}"] if note else []
    lines = ["Timing per case (median):"]
    for case in (timing.get("cases") or [])[:MAX_ITEMS]:
        cand = case.get("candidate") or {}
        spread = ""
        if cand.get("p25_ms") is not None and cand.get("p75_ms") is not None:
            spread = f" [p25 {_fmt(cand['p25_ms'])}, p75 {_fmt(cand['p75_ms'])}]"
        floor = ""
        if case.get("floor_ms") is not None:
            floor = f"; HBM floor {_fmt(case['floor_ms'])} ms"
            if case.get("roofline_fraction") is not None:
                floor += f" ({100 * float(case['roofline_fraction']):.0f}% of roofline)"
        lines.append(
            f"  case {case.get('case')}: candidate {_baseline_ms(cand)}{spread};"
            f" eager {_baseline_ms(case.get('eager'))},"
            f" compile {_baseline_ms(case.get('compile_default'))},"
            f" max-autotune {_baseline_ms(case.get('compile_max_autotune'))}"
            f" -> x{_fmt(case.get('speedup_vs_best'))} vs best{floor}"
        )
    lines.append(
        f"Geomean speedup: x{_fmt(timing.get('geomean_speedup_vs_eager'))} vs eager,"
        f" x{_fmt(timing.get('geomean_speedup_vs_compile'))} vs torch.compile,"
        f" x{_fmt(timing.get('geomean_speedup_vs_best'))} vs the better of the two."
    )
    return lines


RESOURCE_KEYS = ("peak_gpu_memory_mb", "peak_host_memory_mb", "load_s", "check_s")


def _resource_lines(verdict: dict[str, Any]) -> list[str]:
    resources = dict(verdict.get("resources") or (verdict.get("timing") or {}).get("resources") or {})
    overhead = verdict.get("overhead") or {}
    resources.update({k: overhead[k] for k in RESOURCE_KEYS if overhead.get(k) is not None})
    if not resources:
        return []
    items = ", ".join(f"{k}: {_per_kernel(v)}" if isinstance(v, dict) else f"{k}={_fmt(v)}"
                      for k, v in list(resources.items())[:10])
    return [f"Resources: {items}"]


def _per_kernel(values: dict[str, Any]) -> str:
    """``registers 32, spills 0, ...`` for one kernel's resource report."""
    return "(" + ", ".join(f"{k.replace('_', ' ')} {_fmt(v)}" for k, v in values.items()) + ")"


def trim_log(logs: str, max_lines: int = MAX_LOG_LINES) -> list[str]:
    """The informative part of a candidate's output: its first lines and the final error lines."""
    lines = [line.rstrip() for line in (logs or "").strip().splitlines() if line.strip()]
    if len(lines) <= max_lines:
        return lines
    head = max_lines // 3
    return [*lines[:head], f"... ({len(lines) - max_lines} lines omitted)", *lines[-(max_lines - head):]]


def render_feedback(verdict: dict[str, Any] | None, *, max_chars: int = MAX_CHARS) -> str:
    """Turn one verdict into trimmed feedback text for the proposer (empty when there is no verdict)."""
    if not verdict:
        return ""
    lines = [f"Verdict: {verdict.get('verdict', '?')} ({verdict.get('reason', '?')}): {verdict.get('detail', '')}"]
    lines += _static_lines(verdict)
    lines += _correctness_lines(verdict)
    if verdict.get("reason") in {"compile_error", "crashed", "timeout"} and verdict.get("logs"):
        lines += ["Output (trimmed):", *(f"  {line}" for line in trim_log(verdict["logs"]))]
    lines += _timing_lines(verdict)
    lines += _resource_lines(verdict)
    if verdict.get("flags"):
        lines.append("Flags: " + ", ".join(map(str, verdict["flags"][:MAX_ITEMS])))
    text = "\n".join(lines)
    if len(text) > max_chars:
        text = text[: max_chars - 20].rstrip() + "\n... (trimmed)"
    return text
