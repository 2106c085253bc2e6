"""A readable summary of a verdict for terminals (``kernelevo eval`` without ``--json``)."""

from __future__ import annotations

from typing import Any

from evaluator.verdict import TraceEvidence, Verdict

MAX_VIOLATIONS = 5
MAX_TRACE_KERNELS = 4
LOG_LINES = 8


def render_summary(verdict: Verdict) -> str:
    """Plain text: the verdict, why, the correctness evidence and (on GPU) the timings per case."""
    mark = "ACCEPTED" if verdict.accepted else f"REJECTED ({verdict.reason.value})"
    lines = [f"{mark}: {verdict.candidate}", f"  {verdict.detail}", f"  backend: {verdict.backend}, "
             f"device: {verdict.device}"]
    for v in verdict.static.violations[:MAX_VIOLATIONS]:
        lines.append(f"  static: line {v.line}: [{v.rule}] {v.message}")
    for case in verdict.correctness.cases if verdict.correctness else []:
        if not case.checks:
            continue
        worst = max(check.max_abs_err or 0.0 for check in case.checks)
        passed = sum(1 for check in case.checks if check.ok)
        lines.append(f"  case {case.case} [{case.shapes}]: {passed}/{len(case.checks)} checks passed, "
                     f"max abs err {worst:.3g}")
    if verdict.timing:
        lines.append("  timing (median ms):  candidate | eager | compile | speedup vs best | roofline")
        for row in verdict.timing.cases:
            best_compile = row.best_compile
            lines.append(
                f"    case {row.case}: {row.candidate.median_ms:.4f} | "
                f"{_ms(row.eager.median_ms if row.eager else None)} | "
                f"{_ms(best_compile.median_ms if best_compile else None)} | "
                f"{_x(row.speedup_vs_best)} | {_pct(row.roofline_fraction)}")
    elif verdict.timing_note:
        lines.append(f"  {verdict.timing_note}")
    if verdict.trace is not None:
        lines.extend(_trace_lines(verdict.trace))
    overhead = _flat(verdict.overhead.recorded())
    if overhead:
        lines.append("  overhead: " + ", ".join(f"{k}={v}" for k, v in overhead))
    if not verdict.accepted and verdict.logs:
        lines.append("  candidate output (tail):")
        lines.extend("    " + line for line in verdict.logs.strip().splitlines()[-LOG_LINES:])
    return "\n".join(lines)


def _trace_lines(trace: TraceEvidence) -> list[str]:
    """The kernel trace in two lines or so: what ran, how the traced time compares, what was found."""
    kernels = ", ".join(f"{name} x{count}" for name, count in list(trace.kernels.items())[:MAX_TRACE_KERNELS])
    ratio = f", traced/timed median {trace.traced_over_timed_median:.2f}" if trace.traced_over_timed_median else ""
    lines = [f"  kernel trace ({trace.phase or 'GPU'}): {trace.windows} windows, kernels {kernels or 'none'}{ratio}"]
    lines.extend(f"    {f.severity}: {f.message}" for f in trace.findings[:MAX_VIOLATIONS] if f.severity != "info")
    return lines


def _flat(entries: dict[str, Any]) -> list[tuple[str, object]]:
    """Overhead entries with nested phase tables spelled out (``check_phases.first_call_s``)."""
    items: list[tuple[str, object]] = []
    for key, value in entries.items():
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
