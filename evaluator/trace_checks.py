"""The kernel trace of a candidate process, judged in the parent (GPU): what really ran during each call.

The candidate process runs with the trace shim preloaded (:mod:`evaluator.tracing`); its authenticated
records reach this process through a pipe the candidate cannot forge into undetected. After each phase the
harness flushes the trace; here the records are judged against the windows the *parent* planned (it knows
how many calls and trials it asked for): every kernel launched during a forward call must be one of the
candidate's own (or an allocation/copy kernel, or a library the task allows), on the harness's stream, at
least one per call, and a timed trial's traced busy time must agree with its event-timed figure. A trace
that is missing, inactive or tampered with proves nothing, so it never passes.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from evaluator.calls import StopEvaluation
from evaluator.tracing.client import NO_CHANNEL
from evaluator.tracing.judge import Expected, FindingKind, Judgement, Severity, judge, policy_for
from evaluator.tracing.kernel_names import display_name
from evaluator.tracing.records import KernelRecord
from evaluator.verdict import EvalSetupError, Overhead, Reason, Verdict

FLUSH_TIMEOUT_S = 60.0
_SETUP = {FindingKind.NOT_TRACED, FindingKind.TRACING_INACTIVE}


def check_trace(worker: Any, seq: Any, source: str, allow_ops: list[str], expected: Expected,
                evidence: dict[str, Any], phase: str) -> None:
    """Judge the trace of ``worker`` so far (up to the flush ``seq`` the harness reported); stop the evaluation
    with ``cheat_suspected`` on any failing finding. No trace reader (CPU): nothing to judge."""
    reader = getattr(worker, "trace", None)
    if reader is None:
        return
    started = time.perf_counter()
    if isinstance(seq, int) and seq != NO_CHANNEL:
        reader.wait_for_seq(seq, FLUSH_TIMEOUT_S)
    snapshot = reader.snapshot()
    policy, findings = policy_for(source, allow_ops)
    judgement = judge(snapshot.records, policy, expected, tampered=snapshot.tampered, require_active=True)
    overhead = evidence.get("overhead")
    if isinstance(overhead, Overhead):  # every phase's trace work together (profiling only)
        overhead["trace_s"] = round((overhead.trace_s or 0.0) + time.perf_counter() - started, 3)
    findings = [*findings, *judgement.findings]
    evidence["trace"] = summary(judgement, findings, phase)
    failing = [f for f in findings if f.severity is Severity.FAIL]
    if not failing:
        return
    first = failing[0]
    if first.kind in _SETUP:
        raise EvalSetupError(f"the GPU kernel trace does not work here, so no GPU verdict can be given: "
                             f"{first.message}. Check that CUPTI (libcupti) matches the driver "
                             "(docs/verifier.md, 'The kernel trace')")
    reason = Reason.CRASHED if first.kind is FindingKind.DROPPED else Reason.CHEAT_SUSPECTED
    more = f" (and {len(failing) - 1} more finding(s))" if len(failing) > 1 else ""
    raise StopEvaluation(Verdict.reject(reason, f"kernel trace [{phase}]: {first.message}{more}", **evidence))


def summary(judgement: Judgement, findings: list[Any], phase: str) -> dict[str, Any]:
    """What the trace showed, for the verdict: kernels per name, windows, trials' traced vs timed, findings."""
    kernels: Counter[str] = Counter()
    for window in judgement.windows:
        for activity in window.activities:
            if isinstance(activity, KernelRecord):
                kernels[display_name(activity.name, 80)] += 1
    ratios = sorted(t.busy_ms / t.event_ms for t in judgement.trial_timings if t.event_ms)
    return {
        "phase": phase,
        "windows": len(judgement.windows),
        "kernels": dict(kernels.most_common(20)),
        "trials": len(judgement.trial_timings),
        "traced_over_timed_median": round(ratios[len(ratios) // 2], 4) if ratios else None,
        "traced_over_timed_max": round(ratios[-1], 4) if ratios else None,
        "launches_outside_windows": judgement.outside,
        "findings": [{"kind": f.kind.value, "severity": f.severity.value, "message": f.message}
                     for f in findings if f.severity is not Severity.INFO or f.kind is FindingKind.BOOKKEEPING],
    }
