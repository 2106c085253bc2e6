"""Judging a candidate's timings (parent side): speedups, the physical floor, re-validation.

A time below the floor (bytes that must move over measured copy bandwidth, or FLOPs over the measured
matrix rate) with more than 25% headroom is physically implausible: ``cheat_suspected``. The outputs of a
secret sample of the timed calls themselves are re-validated against the reference. A candidate far slower than the
best baseline is ``too_slow``.
"""

from __future__ import annotations

import random
import secrets
import time
from typing import TYPE_CHECKING, Any

from evaluator.callplan import case_elements, plan_sample
from evaluator.calls import (
    Judged,
    OutputChannel,
    StopEvaluation,
    call_worker,
    geomean,
    judge_outputs,
    reported_phases,
    sent_for,
)
from evaluator.trace_checks import check_trace
from evaluator.tracing.judge import Expected
from evaluator.verdict import Reason, Verdict

if TYPE_CHECKING:
    from evaluator.options import EvalOptions
    from evaluator.session import EvaluationSession

TRIAL_STRIDE = 1_000_000  # as the harness numbers trial windows (evaluator.sandboxed.timing_ops)
FLOOR_HEADROOM = 1.25  # roofline fraction above this is beyond the datasheet peak: refused
# Host time (start event to device-wide sync) this far above the event time means work ran outside the
# timed stream; the margin covers launch overhead and a flush still running when the start was recorded.
HOST_EVENT_RATIO, HOST_EVENT_MARGIN_MS = 10.0, 1.0
# A call this short is never too slow, whatever the ratio: on a tiny case the baselines run in microseconds and an
# honest library's host-side work (a sync to read a count, argument checks) is the whole figure. Too slow is about
# kernels that would waste the search's GPU time, which starts far above this.
TOO_SLOW_FROM_MS = 1.0


def time_candidate(session: EvaluationSession, channel: OutputChannel, evidence: dict[str, Any], *,
                   source: str = "", checked_elements: tuple[int, ...] = ()) -> Verdict:
    """Time the candidate, re-validate secret trials against the reference, and judge the whole trace.
    ``checked_elements``: the input elements of each correctness call already made (their windows come first)."""
    options = session.options
    rng = random.Random(secrets.randbits(64))
    timing_files = session.timing_files
    if not timing_files:
        raise StopEvaluation(Verdict.reject(Reason.CRASHED, "no timing inputs: the baselines did not run", **evidence))
    sample = plan_sample(options.timing_trials, len(timing_files), rng)
    started = time.perf_counter()
    with session.gpu.exclusive():  # nothing else of this session runs on the GPU while it is timed
        gpu_wait_s = time.perf_counter() - started
        timed = call_worker(
            channel.worker,
            {
                "op": "time",
                "trials": options.timing_trials,
                "warmup_ms": options.warmup_ms,
                "sets_per_case": len(timing_files[0]),
                "sample": sample,
                **channel.request(session),
            },
            max(options.timeout_s, 600),
            evidence,
            files=[f for sets in timing_files for f in sets],
        )
    overhead = evidence["overhead"]
    overhead["time_s"] = round(time.perf_counter() - started, 3)
    # where the request's time went: waiting for the GPU, the candidate process's handling (its own phases inside),
    # and the rest (descriptors and the reply crossing the socket)
    overhead["time_phases"] = {**reported_phases(timed), "gpu_wait_s": round(gpu_wait_s, 3)}
    overhead["peak_gpu_memory_mb"] = round(timed.get("peak_gpu_memory_mb", 0.0), 1)
    sent = timed.get("sent") or {}
    judged = []
    for entry in sample:
        for trial, name in zip(entry["trials"], entry["names"]):
            item = sent.get(name) or {}
            how = sent_for(sent, name, channel.worker)
            seed = session.timing_seeds[trial % len(session.timing_seeds)]
            judged.append(Judged(name, entry["case"], seed, "task", how, scale=float(item.get("scale", 1.0))))
    trial_ms = {int(case): list(values) for case, values in (timed.get("trial_ms") or {}).items()}
    elements = case_elements(session.plan["cases"])
    expected = Expected(  # the sampled calls are timed trials: their windows are among the trials'
        forward=tuple(range(len(checked_elements))),
        forward_elements=dict(enumerate(checked_elements)),
        trial_elements={case * TRIAL_STRIDE + i: elements.get(case, 0) for case in range(len(timing_files))
                        for i in range(options.timing_trials)},
        trials=tuple(case * TRIAL_STRIDE + i for case in range(len(timing_files))
                     for i in range(options.timing_trials)),
        trial_ms={case * TRIAL_STRIDE + i: ms for case, values in trial_ms.items() for i, ms in enumerate(values)})
    allow = [*options.allow_torch_ops, *session.plan.get("allow_ops", [])]
    check_trace(channel.worker, timed.get("trace_seq"), source, allow, expected, evidence, "timing")
    started = time.perf_counter()
    try:
        judge_outputs(session, channel, judged, evidence, "timed-call re-validation")
    except StopEvaluation as stop:
        stop.verdict.reason = Reason.CHEAT_SUSPECTED
        stop.verdict.detail = (
            "outputs of timed calls are wrong although the checked calls were right (behaves "
            "well only during checks?): " + stop.verdict.detail
        )
        raise
    finally:
        overhead["revalidate_s"] = round(time.perf_counter() - started, 3)
    timing, rejection = judge_timing(timed["cases"], session.baselines or {"cases": []}, options)
    evidence["timing"] = timing
    if rejection is not None:
        reason, detail = rejection
        return Verdict.reject(reason, detail, **evidence)
    detail = (
        f"correct on {len(timing['cases'])} case(s) x {len(session.seeds)} seeds and clean; geomean speedup "
        f"{_fmt(timing['geomean_speedup_vs_eager'])} over eager, {_fmt(timing['geomean_speedup_vs_compile'])} "
        f"over torch.compile, {_fmt(timing['geomean_speedup_vs_best'])} over the better of the two"
    )
    return Verdict.accept(detail, **evidence)


def judge_timing(
    timed_cases: list[dict[str, Any]],
    baselines: dict[str, Any],
    options: EvalOptions,
) -> tuple[dict[str, Any], tuple[Reason, str] | None]:
    """Speedups per case and overall, and the rejection (reason, detail) the timings call for, if any.

    Pure: the candidate's and the baselines' statistics in, the verdict's ``timing`` and a decision out.
    """
    by_case = {c["case"]: c for c in baselines["cases"]}
    rows = [_row(entry, by_case.get(entry["case"], {})) for entry in timed_cases]
    timing = {
        "cases": rows,
        "geomean_speedup_vs_eager": geomean([r["speedup_vs_eager"] for r in rows]),
        "geomean_speedup_vs_compile": geomean([r["speedup_vs_compile"] for r in rows]),
        "geomean_speedup_vs_best": geomean([r["speedup_vs_best"] for r in rows]),
        "copy_bandwidth_gbps": baselines.get("copy_bandwidth_gbps"),
        "matmul_tflops": baselines.get("matmul_tflops"),
        "baseline_notes": baselines.get("notes", {}),
        "method": (
            "CUDA events around each call on the current stream, cross-checked against the host clock up to "
            "a device-wide sync; 256 MB L2 flush before every call, "
            f"{options.timing_input_sets} rotating input sets rescaled before every call, "
            f"{options.timing_trials} trials after >= {options.warmup_ms:g} ms warm-up; median with "
            "quartiles; CUDA-graph replay below 20 us"
        ),
    }
    empty = [str(row["case"]) for row in rows if row.get("empty_graph")]
    if empty:
        # Kernels launched with <<<grid, block>>> and no stream run on the legacy default stream, which a graph
        # captured on a side stream does not see. Where their work ran is the kernel trace's question (every
        # launch on the harness's stream); here it only means the event-timed figure, launch overhead included,
        # stands for these cases.
        timing["notes"] = [f"case(s) {', '.join(empty)}: timed without CUDA-graph replay, launch overhead included: "
                           "the kernels launch on the legacy default stream (<<<grid, block>>> without a stream), "
                           "which a CUDA graph cannot capture; pass at::cuda::getCurrentCUDAStream() as the launch's "
                           "stream to be timed without the overhead"]
    for row in rows:
        case, median = row["case"], row["candidate"]["median_ms"]
        host = row["candidate"].get("host_median_ms")
        if host is not None and host > HOST_EVENT_RATIO * median + HOST_EVENT_MARGIN_MS:
            return timing, (
                Reason.CHEAT_SUSPECTED,
                f"case {case}: the device stayed busy for {host:.3f} ms per call but the events on the current "
                f"stream saw {median:.4f} ms: work ran outside the timed stream (launch every kernel on "
                "torch.cuda.current_stream())",
            )
        fraction = row.get("roofline_fraction")
        if fraction and fraction > FLOOR_HEADROOM:
            return timing, (
                Reason.CHEAT_SUSPECTED,
                f"case {case}: {median:.4f} ms is {fraction:.2f}x faster than "
                f"the physical floor ({row['floor_ms']:.4f} ms): the work cannot all have been done",
            )
        best = row.get("best_baseline_ms")
        if best and median > options.max_slowdown * best and median > TOO_SLOW_FROM_MS:
            return timing, (
                Reason.TOO_SLOW,
                f"case {case}: {median:.3f} ms is more than {options.max_slowdown:g}x "
                f"the best baseline ({best:.3f} ms)",
            )
    return timing, None


def _row(entry: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    cand = entry["candidate"]["median_ms"]
    graph = entry.get("graph") or {}
    row: dict[str, Any] = {"case": entry["case"], "candidate": entry["candidate"]}
    if graph.get("empty_graph"):
        row["empty_graph"] = True
    elif graph:
        row["candidate_graph_ms"] = graph["per_call_ms"]
    for mode in ("eager", "compile_default", "compile_max_autotune"):
        if mode in base:
            row[mode] = base[mode]
    eager = base.get("eager", {}).get("median_ms")
    compiled = [base[m]["median_ms"] for m in ("compile_default", "compile_max_autotune") if m in base]
    best_compile = min(compiled) if compiled else None
    best = min([x for x in (eager, best_compile) if x]) if (eager or best_compile) else None
    row["speedup_vs_eager"] = eager / cand if eager else None
    row["speedup_vs_compile"] = best_compile / cand if best_compile else None
    row["speedup_vs_best"] = best / cand if best else None
    row["best_baseline_ms"] = best
    row["floor_ms"] = base.get("floor_ms")
    row["roofline_fraction"] = base["floor_ms"] / cand if base.get("floor_ms") else None
    if base.get("eager_graph"):
        row["eager_graph_ms"] = base["eager_graph"].get("per_call_ms")
    return row


def _fmt(x: float | None) -> str:
    return f"{x:.2f}x" if x else "n/a"
