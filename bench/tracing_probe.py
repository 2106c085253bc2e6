"""Probe of the CUPTI trace shim on a GPU machine: does it see what candidates launch, and what does it cost?

Run on the GPU machine (one call, well under 2 minutes)::

    python bench/tracing_probe.py --out /tmp/tracing_probe.json

It builds the shim (``evaluator/tracing/build.py``), then starts child Pythons under LD_PRELOAD with the trace
channel, as the verifier would:

* ``cases``: a Triton kernel, torch ops (softmax, matmul), a kernel on a side stream, ``torch.cuda._sleep``, the
  allocation/copy/cast ops a candidate may run, 100 harness-style timed trials of the Triton kernel, and one trial
  that hides work on a side stream; MARKs around each. The parent judges the records (``judge.py``). It runs
  twice: with CUPTI's launch (queued) timestamps, and without them (``KERNELEVO_TRACE_LATENCY=0``: cheaper, the
  trials' preamble is then set aside by launch order).
* ``overhead``: the same 100 timed trials without the shim, and under the shim with and without launch
  timestamps (CUDA events), to compare medians.
* ``forge-garbage`` / ``forge-replay`` / ``forge-mac``: a child that finds the record pipe and writes garbage, an
  authentic frame again, or a frame with a made-up MAC; the parent must report the trace as tampered.

The JSON written to ``--out`` says which records arrived (names, streams, timestamps), the findings for each
case, the overhead, and the forgery results; when something is missing (compiler, CUPTI, GPU) it says what.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# The "candidate" the cases child imports from a file (Triton reads kernel source from files).
CANDIDATE_SOURCE = '''
import triton
import triton.language as tl


@triton.jit
def probe_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def add(x, y, out):
    n = x.numel()
    probe_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out
'''

CASES = {0: "triton_kernel", 1: "torch_softmax_matmul", 2: "side_stream_kernel", 3: "torch_cuda_sleep",
         4: "allowed_memory_ops"}
TRIALS = 100
HIDDEN_TRIAL = TRIALS  # the trial that hides work on a side stream
FLUSH_BYTES = 64 << 20
COVER_CYCLES = 400_000  # ~0.2 ms on an H200, the harness's launch cover


def jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, enum.Enum):
        return obj.name if isinstance(obj, int) else obj.value
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    return obj


# ---------------------------------------------------------------- children

def _timed_trials(torch, call, tracer, tags, first: int = 0, count: int = TRIALS) -> list[float]:
    """Harness-style trials: flush, busy-wait cover, start event, [mark], call, end event, sync, [mark]."""
    flush = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    times = []
    mark_s = []
    for k in range(first, first + count):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        flush.zero_()
        torch.cuda._sleep(COVER_CYCLES)
        start.record()
        if tracer:
            t0 = time.perf_counter()
            tracer.mark(tags.mark_tag(tags.WindowKind.TRIAL, tags.Edge.BEGIN, k), stream)
            mark_s.append(time.perf_counter() - t0)
        call()
        end.record()
        torch.cuda.synchronize()
        if tracer:
            tracer.mark(tags.mark_tag(tags.WindowKind.TRIAL, tags.Edge.END, k), stream)
        times.append(start.elapsed_time(end))
    if mark_s and count > 1:
        print("MARKCOST " + json.dumps({"median_us": statistics.median(mark_s) * 1e6, "max_us": max(mark_s) * 1e6}))
    return times


def child_main(mode: str, args: list[str]) -> None:
    result: dict[str, Any] = {"mode": mode}
    tracer = None
    if mode in ("cases", "forge-garbage", "forge-replay", "forge-mac"):
        from evaluator.tracing import client, tags

        tracer = client.bind(args[0])  # bound before any "candidate" code is imported
        result["tracer_loaded"] = tracer.loaded
        result["tracer_status"] = tracer.status()
        result["tracer_problem"] = tracer.problem
    if mode.startswith("forge"):
        _forge(mode, int(args[1]), tracer, result)
        print("RESULT " + json.dumps(result), flush=True)
        return
    import torch

    result["torch"] = torch.__version__
    if not torch.cuda.is_available():
        result["error"] = "torch.cuda.is_available() is False: no GPU visible to the child"
        print("RESULT " + json.dumps(result), flush=True)
        return
    import triton

    result["triton"] = triton.__version__
    result["gpu"] = torch.cuda.get_device_name()
    workdir = Path(tempfile.mkdtemp(prefix="tracing-probe-"))
    (workdir / "probe_candidate.py").write_text(CANDIDATE_SOURCE)
    sys.path.insert(0, str(workdir))
    import probe_candidate  # noqa: E402  (imported like a candidate, after the tracer is bound)

    add = probe_candidate.add
    n = 1 << 16
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    a = torch.randn(256, 256, device="cuda")
    add(x, y, out)  # compile and warm up outside every window
    torch.softmax(a, -1) @ a
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    if mode == "overhead":
        result["trial_ms"] = _timed_trials(torch, lambda: add(x, y, out), None, None)
        print("RESULT " + json.dumps(result), flush=True)
        return
    from evaluator.tracing import tags

    stream = torch.cuda.current_stream().cuda_stream
    result["harness_stream_handle"] = stream

    def window(k: int, body) -> None:
        torch.cuda.synchronize()
        tracer.mark(tags.mark_tag(tags.WindowKind.FORWARD, tags.Edge.BEGIN, k), stream)
        body()
        torch.cuda.synchronize()
        tracer.mark(tags.mark_tag(tags.WindowKind.FORWARD, tags.Edge.END, k), stream)

    side = torch.cuda.Stream()

    def on_side() -> None:
        with torch.cuda.stream(side):
            add(x, y, out)

    def memory_ops() -> None:
        z = torch.zeros(n, device="cuda")
        h = x.to(torch.float16)
        t = a.t().contiguous()
        c = h.clone()
        add(x, z, out)
        del t, c

    window(0, lambda: add(x, y, out))
    window(1, lambda: torch.softmax(a, -1) @ a)
    window(2, on_side)
    window(3, lambda: torch.cuda._sleep(100_000))
    window(4, memory_ops)
    result["trial_ms"] = _timed_trials(torch, lambda: add(x, y, out), tracer, tags)

    def hiding() -> None:  # the call also queues 0.5 ms on a side stream: outside the events, inside the trace
        with torch.cuda.stream(side):
            torch.cuda._sleep(1_000_000)
        add(x, y, out)

    (result["hidden_trial_ms"],) = _timed_trials(torch, hiding, tracer, tags, first=HIDDEN_TRIAL, count=1)
    result["flush_seq"] = tracer.flush()
    result["tracer_status_end"] = tracer.status()
    print("RESULT " + json.dumps(result), flush=True)


def _find_pipe(inode: int) -> int | None:
    """The descriptor of the record pipe, found the way a candidate would: by scanning /proc/self/fd."""
    for entry in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{entry}") == f"pipe:[{inode}]":
                return int(entry)
        except OSError:
            continue
    return None


def _forge(mode: str, inode: int, tracer, result: dict[str, Any]) -> None:
    import struct

    from evaluator.tracing import tags

    fd = _find_pipe(inode)
    result["found_fd"] = fd
    if fd is None:
        result["error"] = "the record pipe was not found among this process's descriptors"
        return
    tracer.mark(tags.mark_tag(tags.WindowKind.FORWARD, tags.Edge.BEGIN, 0), 0)
    if mode == "forge-garbage":
        os.write(fd, os.urandom(64))
    elif mode == "forge-replay":
        frame = bytes.fromhex(sys.stdin.readline().strip())  # an authentic frame the parent hands over
        os.write(fd, frame)
    else:  # a well-formed frame with the next seq and a made-up MAC
        body = struct.pack("<QB", tracer.flush() + 1, 6) + struct.pack("<QQQIB", 1, 2, 0, 7, 0)
        os.write(fd, struct.pack("<I", len(body) + 8) + body + os.urandom(8))
    tracer.mark(tags.mark_tag(tags.WindowKind.FORWARD, tags.Edge.END, 0), 0)
    result["flush_seq"] = tracer.flush()


# ---------------------------------------------------------------- parent

def _run_child(mode: str, built, timeout_s: float, traced: bool = True, stdin_data: bytes | None = None,
               after_start=None, extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    from evaluator.tracing.reader import TraceChannel

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    args = [sys.executable, str(Path(__file__).resolve()), "--child", mode]
    channel = None
    if traced:
        channel = TraceChannel.open(built.library, built.cupti_library, os.path.realpath(sys.executable))
        env.update(channel.child_env())
        env.update(extra_env or {})
        if os.environ.get("LD_PRELOAD"):
            env["LD_PRELOAD"] = f"{built.library}:{os.environ['LD_PRELOAD']}"
        args += [str(built.library), str(os.fstat(channel.record_read).st_ino)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            pass_fds=channel.child_fds() if channel else ())
    reader = channel.start_reading() if channel else None
    if after_start is not None:
        stdin_data = after_start(reader, channel)
    try:
        out, err = proc.communicate(stdin_data, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    entry: dict[str, Any] = {"returncode": proc.returncode, "seconds": round(time.perf_counter() - t0, 2)}
    text = out.decode(errors="replace").splitlines()
    lines = [ln for ln in text if ln.startswith("RESULT ")]
    entry["child"] = json.loads(lines[-1][7:]) if lines else None
    costs = [ln for ln in text if ln.startswith("MARKCOST ")]
    if costs:
        entry["mark_host_cost"] = json.loads(costs[-1][9:])
    if entry["child"] is None or proc.returncode:
        entry["stderr_tail"] = err.decode(errors="replace")[-3000:]
    if reader is not None:
        reader.wait_ended(15)
        entry["snapshot"] = reader.snapshot()
        reader.close()
    return entry


def _record_summary(records) -> dict[str, Any]:
    from evaluator.tracing.records import KernelRecord, MemcpyRecord, MemsetRecord

    counts = Counter(type(r).__name__ for r in records)
    kernels = [r for r in records if isinstance(r, KernelRecord)]
    return {
        "counts": dict(counts),
        "kernels_with_queued_time": sum(1 for k in kernels if k.queued),
        "distinct_kernel_names": sorted({k.name for k in kernels}),
        "streams": sorted({r.stream for r in records if isinstance(r, KernelRecord | MemcpyRecord | MemsetRecord)}),
        "non_activity": [jsonable(r) for r in records if not isinstance(r, KernelRecord | MemcpyRecord | MemsetRecord)
                         ][:40],
    }


def _window_report(window, policy) -> dict[str, Any]:
    from evaluator.tracing.judge import check_window
    from evaluator.tracing.kernel_names import classify
    from evaluator.tracing.records import KernelRecord

    acts = []
    for a in window.activities:
        item = {"type": type(a).__name__, "stream": a.stream, "start": a.start, "end": a.end,
                "duration_us": round((a.end - a.start) / 1e3, 2), "correlation": a.correlation}
        if isinstance(a, KernelRecord):
            cls = classify(a.name, policy.own)
            item.update(name=a.name, display=cls.display, family=cls.family.value, queued=a.queued,
                        queued_before_begin_ns=(window.begin.timestamp - a.queued) if a.queued else None,
                        grid=a.grid, block=a.block, registers=a.registers)
        else:
            item["bytes"] = a.bytes
        acts.append(item)
    return {"window": jsonable(window.ref), "harness_stream_id": window.stream_id,
            "begin_ts": window.begin.timestamp, "end_ts": window.end.timestamp,
            "mark_flags": [window.begin.flags.name, window.end.flags.name], "activities": acts,
            "findings": jsonable(check_window(window, policy))}


def _judge_without_latency(built, policy) -> dict[str, Any]:
    """The same cases with CUPTI's queued timestamps off (cheaper): the harness's trial preamble (flush,
    busy-wait) is then set aside by launch order instead."""
    from evaluator.tracing.judge import Expected, judge
    from evaluator.tracing.tags import WindowKind

    run = _run_child("cases", built, 150, extra_env={"KERNELEVO_TRACE_LATENCY": "0"})
    snap = run.pop("snapshot")
    child = run.get("child") or {}
    if "trial_ms" not in child:
        return {"missing": child.get("error") or run.get("stderr_tail")}
    trial_ms = dict(enumerate(child["trial_ms"]))
    trial_ms[HIDDEN_TRIAL] = child["hidden_trial_ms"]
    verdict = judge(snap.records, policy, Expected(tuple(CASES), tuple(range(TRIALS + 1)), trial_ms,
                                                   trial_preamble=2), tampered=snap.tampered)
    per_window: dict[str, list[str]] = {}
    for f in verdict.findings:
        if f.window is not None and f.severity.value == "fail":
            per_window.setdefault(f.window.describe(), []).append(f.kind.value)
    honest = {k: v for k, v in per_window.items() if k.startswith("timed trial") and k != f"timed trial {HIDDEN_TRIAL}"}
    return {"fail_findings_by_window": per_window, "honest_trials_clean": not honest,
            "hidden_trial_caught": "timing_mismatch" in per_window.get(f"timed trial {HIDDEN_TRIAL}", []),
            "kernels_per_trial": sorted(Counter(tt.kernels for tt in verdict.trial_timings
                                                if tt.index != HIDDEN_TRIAL).items()),
            "event_median_ms": statistics.median(child["trial_ms"]),
            "forward_windows": {CASES[w.ref.index]: [a.name if hasattr(a, "name") else type(a).__name__
                                                     for a in w.activities]
                                for w in verdict.windows if w.ref.kind is WindowKind.FORWARD}}


def _tamper_check(mode: str, built) -> dict[str, Any]:
    from evaluator.tracing.records import encode_record

    def hand_over(reader, channel):
        if mode != "forge-replay":
            return None
        reader.wait_for_seq(1, 15)  # START (and any ERROR) has arrived
        first = reader.snapshot().records[0]
        return (encode_record(channel.key, first).hex() + "\n").encode()

    entry = _run_child(mode, built, 30, after_start=hand_over)
    snap = entry.pop("snapshot")
    entry["records_before_violation"] = len(snap.records)
    entry["tampered"] = jsonable(snap.tampered)
    entry["detected"] = snap.tampered is not None
    return entry


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child_main(argv[1], argv[2:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "kernelevo-trace-cache")
    ns = parser.parse_args(argv)
    t0 = time.perf_counter()
    report: dict[str, Any] = {"python": sys.version.split()[0], "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    try:
        report.update(_probe(ns.cache, report))
    except Exception as exc:  # report what failed rather than a traceback alone
        import traceback

        report["error"] = f"{type(exc).__name__}: {exc}"
        report["traceback"] = traceback.format_exc()[-4000:]
    report["probe_seconds"] = round(time.perf_counter() - t0, 1)
    ns.out.parent.mkdir(parents=True, exist_ok=True)
    ns.out.write_text(json.dumps(jsonable(report), indent=1))
    print(json.dumps({k: report.get(k) for k in ("ok", "missing", "error", "summary", "probe_seconds")}, indent=1))
    return 0 if report.get("ok") else 1


def _probe(cache: Path, report: dict[str, Any]) -> dict[str, Any]:
    from evaluator.tracing.build import BuildError, build_shim
    from evaluator.tracing.judge import Expected, KernelPolicy, allowed_families, check_window, judge, policy_for
    from evaluator.tracing.tags import WindowKind

    t = time.perf_counter()
    built = build_shim(cache)
    if isinstance(built, BuildError):
        return {"ok": False, "missing": str(built)}
    out: dict[str, Any] = {"build": jsonable(built), "build_seconds": round(time.perf_counter() - t, 2)}
    cases = _run_child("cases", built, 150)
    snap = cases.pop("snapshot")
    child = cases.get("child") or {}
    out["cases_child"] = cases
    out["records"] = _record_summary(snap.records)
    out["tampered_in_cases"] = jsonable(snap.tampered)
    out["forgery"] = {mode: _tamper_check(mode, built) for mode in ("forge-garbage", "forge-replay", "forge-mac")}
    if "trial_ms" not in child:
        out["ok"] = False
        out["missing"] = child.get("error") or "the cases child did not finish (see cases_child.stderr_tail)"
        return out
    policy, impersonating = policy_for(CANDIDATE_SOURCE)
    trial_ms = dict(enumerate(child["trial_ms"]))
    trial_ms[HIDDEN_TRIAL] = child["hidden_trial_ms"]
    verdict = judge(snap.records, policy, Expected(tuple(CASES), tuple(range(TRIALS + 1)), trial_ms),
                    tampered=snap.tampered)
    out["without_launch_times"] = _judge_without_latency(built, policy)
    by_window = {w.ref: w for w in verdict.windows}
    out["cases"] = {}
    for index, name in CASES.items():
        window = next((w for ref, w in by_window.items() if ref.kind is WindowKind.FORWARD and ref.index == index),
                      None)
        out["cases"][name] = _window_report(window, policy) if window else {"missing": True}
    softmax = next((w for w in verdict.windows if w.ref.kind is WindowKind.FORWARD and w.ref.index == 1), None)
    if softmax is not None:
        matmul_ok = KernelPolicy(policy.own, allowed_families(["aten.mm"]))
        out["cases"]["torch_softmax_matmul"]["findings_if_task_allows_aten_mm"] = jsonable(
            check_window(softmax, matmul_ok))
    timings = [tt for tt in verdict.trial_timings if tt.index != HIDDEN_TRIAL]
    hidden = next((w for w in verdict.windows if w.ref.kind is WindowKind.TRIAL and w.ref.index == HIDDEN_TRIAL), None)
    out["hidden_work_trial"] = _window_report(hidden, policy) if hidden else {"missing": True}
    out["hidden_work_trial"]["timing"] = jsonable(next((tt for tt in verdict.trial_timings
                                                        if tt.index == HIDDEN_TRIAL), None))
    ratios = [tt.busy_ms / tt.event_ms for tt in timings if tt.event_ms]
    out["trials"] = {
        "n": len(timings),
        "event_median_ms": statistics.median(child["trial_ms"]),
        "traced_busy_median_ms": statistics.median(tt.busy_ms for tt in timings) if timings else None,
        "busy_over_event_max": max(ratios) if ratios else None,
        "busy_over_event_median": statistics.median(ratios) if ratios else None,
        "kernels_per_trial": sorted(Counter(tt.kernels for tt in timings).items()),
        "first_trial": _window_report(by_window[next(r for r in by_window if r.kind is WindowKind.TRIAL)], policy),
    }
    out["judgement"] = {"findings": jsonable(verdict.findings), "impersonations": jsonable(impersonating),
                        "outside_windows": verdict.outside}
    runs = {"untraced": _run_child("overhead", built, 60, traced=False),
            "cupti_latency_on": _run_child("overhead", built, 60),
            "cupti_latency_off": _run_child("overhead", built, 60, extra_env={"KERNELEVO_TRACE_LATENCY": "0"})}
    medians = {"traced_with_marks": statistics.median(child["trial_ms"])}
    spreads = {"traced_with_marks": statistics.quantiles(child["trial_ms"], n=4)[::2]}
    for name, run in runs.items():
        times = (run.get("child") or {}).get("trial_ms")
        if times:
            medians[name] = statistics.median(times)
            spreads[name] = statistics.quantiles(times, n=4)[::2]
        else:
            medians[name] = None
            spreads[name] = run.get("stderr_tail")
    base = medians.get("untraced")
    out["overhead"] = {"median_ms": medians, "p25_p75_ms": spreads,
                       "over_untraced": {k: (v / base if base and v else None) for k, v in medians.items()},
                       "kernel": "probe_add_kernel on 65536 floats, 100 harness-style trials each"}
    expected_fail = {"torch_softmax_matmul": {"foreign_kernels", "no_own_kernel"},
                     "side_stream_kernel": {"off_stream"},
                     "torch_cuda_sleep": {"foreign_kernels", "no_own_kernel"}}
    summary = {}
    for name, case in out["cases"].items():
        kinds = {f["kind"] for f in case.get("findings", []) if f["severity"] == "fail"}
        summary[name] = {"fail_findings": sorted(kinds),
                         "as_expected": kinds == expected_fail.get(name, set()) and not case.get("missing")}
    hidden_kinds = {f.kind.value for f in verdict.findings
                    if f.window is not None and f.window.kind is WindowKind.TRIAL and f.window.index == HIDDEN_TRIAL}
    summary["hidden_work_trial"] = {"findings": sorted(hidden_kinds),
                                    "timing_mismatch_found": "timing_mismatch" in hidden_kinds}
    honest_trial_fails = [f for f in verdict.failures if f.window is not None and f.window.kind is WindowKind.TRIAL
                          and f.window.index != HIDDEN_TRIAL]
    summary["honest_trials_clean"] = not honest_trial_fails
    summary["without_launch_times"] = {k: out["without_launch_times"].get(k) for k in
                                       ("honest_trials_clean", "hidden_trial_caught", "kernels_per_trial")}
    summary["forgery_detected"] = {m: v["detected"] for m, v in out["forgery"].items()}
    summary["overhead_over_untraced"] = out["overhead"]["over_untraced"]
    out["summary"] = summary
    out["honest_trial_failures"] = jsonable(honest_trial_fails[:5])
    out["ok"] = True
    return out


if __name__ == "__main__":
    sys.exit(main())
