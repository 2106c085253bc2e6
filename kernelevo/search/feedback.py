"""Feedback for the proposer: a verdict rendered as short, specific text.

What a kernel author needs to write the next version, and nothing else: why it was rejected (first
lines of a compile error, the failing case/check with its error sizes, static violations with their
lines), and for accepted kernels the timings per case against each baseline and the roofline floor.
Pure: verdict in, text out; trimmed so that a prompt with several parents stays small.
"""

from __future__ import annotations

from evaluator.verdict import (
    CaseEvidence,
    CheckResult,
    KernelResources,
    Reason,
    ScalarSpec,
    TimeStats,
    ValueSpec,
    Verdict,
)

MAX_CHARS = 2400
MAX_LOG_LINES = 14
MAX_ITEMS = 6
LOG_REASONS = frozenset({Reason.COMPILE_ERROR, Reason.CRASHED, Reason.TIMEOUT})  # where the output tells why


def _fmt(value: object, digits: int = 3) -> str:
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _inputs(inputs: list[ValueSpec]) -> str:
    parts = [f"{item.type}={item.value!r}" if isinstance(item, ScalarSpec)
             else f"{tuple(item.shape)} {item.short_dtype}".strip() for item in inputs]
    return ", ".join(parts) or "?"


def _tolerance(case: CaseEvidence) -> str:
    if not case.tolerance:
        return ""
    first = case.tolerance[0]
    widen = f" widen={_fmt(first.widen)}" if first.widen != 1.0 else ""
    return f"; tolerance atol={_fmt(first.atol)} rtol={_fmt(first.rtol)} rel={_fmt(first.rel)}{widen}"


def _static_lines(verdict: Verdict) -> list[str]:
    violations = verdict.static.violations
    lines = [f"  line {v.line}:{v.col} [{v.rule}] {v.message}" for v in violations[:MAX_ITEMS]]
    if len(violations) > MAX_ITEMS:
        lines.append(f"  ... and {len(violations) - MAX_ITEMS} more")
    return ["Static check violations:", *lines] if lines else []


def _badness(check: CheckResult) -> float:
    return float(check.rel_l2_err or check.max_abs_err or 0.0)


def _correctness_lines(verdict: Verdict) -> list[str]:
    cases = verdict.correctness.cases if verdict.correctness else []
    failures, checked, worst_ok = [], 0, 0.0
    for case in cases:
        checked += len(case.checks)
        bad = [check for check in case.checks if not check.ok]
        worst_ok = max([worst_ok, *(float(check.max_abs_err or 0.0) for check in case.checks if check.ok)])
        if not bad:
            continue
        worst = max(bad, key=_badness)
        where = ", ".join(part for part in (worst.distribution, worst.phase) if part)
        failures.append(
            f"  case {case.case} (inputs {_inputs(case.inputs)}{_tolerance(case)}):"
            f" {len(bad)} of {len(case.checks)} checks fail; worst: check {worst.check}"
            + (f" ({where})" if where else "")
            + f": max_abs_err={_fmt(worst.max_abs_err)} max_rel_err={_fmt(worst.max_rel_err)}"
            f" rel_l2_err={_fmt(worst.rel_l2_err)}"
        )
    if failures:
        more = [f"  ... and {len(failures) - MAX_ITEMS} more failing cases"] if len(failures) > MAX_ITEMS else []
        return ["Failing correctness checks:", *failures[:MAX_ITEMS], *more]
    if checked:
        return [f"Correct on {len(cases)} case(s), {checked} judged runs, max_abs_err={_fmt(worst_ok)}."]
    return []


def _baseline_ms(stats: TimeStats | None) -> str:
    return f"{_fmt(stats.median_ms)} ms" if stats is not None else "n/a"


def _timing_lines(verdict: Verdict) -> list[str]:
    timing = verdict.timing
    if timing is None:
        return [f"Timing: {verdict.timing_note}"] if verdict.timing_note else []
    lines = ["Timing per case (median):"]
    for case in timing.cases[:MAX_ITEMS]:
        cand = case.candidate
        spread = ""
        if cand.p25_ms is not None and cand.p75_ms is not None:
            spread = f" [p25 {_fmt(cand.p25_ms)}, p75 {_fmt(cand.p75_ms)}]"
        floor = ""
        if case.floor_ms is not None:
            floor = f"; HBM floor {_fmt(case.floor_ms)} ms"
            if case.roofline_fraction is not None:
                floor += f" ({100 * case.roofline_fraction:.0f}% of roofline)"
        lines.append(
            f"  case {case.case}: candidate {_baseline_ms(cand)}{spread};"
            f" eager {_baseline_ms(case.eager)},"
            f" compile {_baseline_ms(case.compile_default)},"
            f" max-autotune {_baseline_ms(case.compile_max_autotune)}"
            f" -> x{_fmt(case.speedup_vs_best)} vs best{floor}"
        )
    lines.append(
        f"Geomean speedup: x{_fmt(timing.geomean_speedup_vs_eager)} vs eager,"
        f" x{_fmt(timing.geomean_speedup_vs_compile)} vs torch.compile,"
        f" x{_fmt(timing.geomean_speedup_vs_best)} vs the better of the two."
    )
    return lines


RESOURCE_KEYS = ("peak_gpu_memory_mb", "peak_host_memory_mb", "load_s", "check_s")  # Overhead fields worth showing


def _resource_lines(verdict: Verdict) -> list[str]:
    items = [f"{name}: {_per_kernel(kernel)}" for name, kernel in verdict.resources.items()]
    items += [f"{key}={_fmt(value)}" for key in RESOURCE_KEYS if (value := getattr(verdict.overhead, key)) is not None]
    if not items:
        return []
    return [f"Resources: {', '.join(items[:10])}"]


def _per_kernel(kernel: KernelResources) -> str:
    """``(registers 32, spills 0, ...)`` for one kernel's resource report."""
    return "(" + ", ".join(f"{k.replace('_', ' ')} {_fmt(v)}" for k, v in kernel.recorded().items()) + ")"


def trim_log(logs: str, max_lines: int = MAX_LOG_LINES) -> list[str]:
    """The informative part of a candidate's output: its first lines and the final error lines."""
    lines = [line.rstrip() for line in (logs or "").strip().splitlines() if line.strip()]
    if len(lines) <= max_lines:
        return lines
    head = max_lines // 3
    return [*lines[:head], f"... ({len(lines) - max_lines} lines omitted)", *lines[-(max_lines - head):]]


def render_feedback(verdict: Verdict | None, *, max_chars: int = MAX_CHARS) -> str:
    """Turn one verdict into trimmed feedback text for the proposer (empty when there is no verdict)."""
    if verdict is None:
        return ""
    lines = [f"Verdict: {verdict.verdict} ({verdict.reason.value}): {verdict.detail}"]
    lines += _static_lines(verdict)
    lines += _correctness_lines(verdict)
    if verdict.reason in LOG_REASONS and verdict.logs:
        lines += ["Output (trimmed):", *(f"  {line}" for line in trim_log(verdict.logs))]
    lines += _timing_lines(verdict)
    lines += _resource_lines(verdict)
    if verdict.flags:
        lines.append("Flags: " + ", ".join(verdict.flags[:MAX_ITEMS]))
    text = "\n".join(lines)
    if len(text) > max_chars:
        text = text[: max_chars - 20].rstrip() + "\n... (trimmed)"
    return text
