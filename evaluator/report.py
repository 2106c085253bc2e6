"""A readable summary of a verdict for terminals (``kernelevo eval`` without ``--json``)."""

from __future__ import annotations

from evaluator.verdict import Verdict


def render_summary(verdict: Verdict) -> str:
    """Plain text: the verdict, why, the correctness evidence and (on GPU) the timings per case."""
    mark = "ACCEPTED" if verdict.accepted else f"REJECTED ({verdict.reason})"
    lines = [f"{mark}: {verdict.candidate}", f"  {verdict.detail}", f"  backend: {verdict.backend}, "
             f"device: {verdict.device}"]
    for v in verdict.static.get("violations", [])[:5]:
        lines.append(f"  static: line {v['line']}: [{v['rule']}] {v['message']}")
    cases = verdict.correctness.get("cases", [])
    for case in cases:
        runs = case.get("checks", [])
        if not runs:
            continue
        worst = max((s.get("max_abs_err") or 0.0) for s in runs)
        shapes = ", ".join("x".join(map(str, i["shape"])) for i in case["inputs"] if "shape" in i)
        passed = sum(1 for s in runs if s["ok"])
        lines.append(f"  case {case['case']} [{shapes}]: {passed}/{len(runs)} checks passed, max abs err {worst:.3g}")
    timing = verdict.timing
    if timing:
        lines.append("  timing (median ms):  candidate | eager | compile | speedup vs best | roofline")
        for row in timing["cases"]:
            best_compile = min((row[m]["median_ms"] for m in ("compile_default", "compile_max_autotune") if m in row),
                               default=None)
            lines.append(
                f"    case {row['case']}: {row['candidate']['median_ms']:.4f} | "
                f"{_ms(row.get('eager', {}).get('median_ms'))} | {_ms(best_compile)} | "
                f"{_x(row.get('speedup_vs_best'))} | {_pct(row.get('roofline_fraction'))}")
    elif verdict.timing_note:
        lines.append(f"  {verdict.timing_note}")
    if verdict.overhead:
        lines.append("  overhead: " + ", ".join(f"{k}={v}" for k, v in _flat(verdict.overhead)))
    if not verdict.accepted and verdict.logs:
        lines.append("  candidate output (tail):")
        lines.extend("    " + line for line in verdict.logs.strip().splitlines()[-8:])
    return "\n".join(lines)


def _flat(overhead: dict) -> list[tuple[str, object]]:
    """Overhead entries with nested phase tables spelled out (``check_phases.first_call_s``)."""
    items: list[tuple[str, object]] = []
    for key, value in overhead.items():
        if isinstance(value, dict):
            items.extend((f"{key}.{phase}", seconds) for phase, seconds in value.items())
        else:
            items.append((key, value))
    return items


def _ms(x: float | None) -> str:
    return f"{x:.4f}" if x else "n/a"


def _x(x: float | None) -> str:
    return f"{x:.2f}x" if x else "n/a"


def _pct(x: float | None) -> str:
    return f"{100 * x:.0f}%" if x else "n/a"
