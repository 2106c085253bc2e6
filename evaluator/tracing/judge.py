"""Judging a trace: pure functions from authenticated records and the harness's windows to typed findings.

The harness brackets every forward call and every timed trial with MARK records (``tags.py``). Each kernel is
placed in the window during which it was *launched* (CUPTI's queued timestamp; its start time where CUPTI has
no queued time, and always for copies and memsets, which is why the harness synchronises before a forward
window opens). Per window: every kernel must be the candidate's own or an allowed ATen memory kernel (or a
library family the task allows), all work must run on the harness's stream, a forward call must launch at
least one candidate kernel, and in a timed trial the traced busy time must not exceed the event-timed figure.
"""

from __future__ import annotations

import bisect
import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from evaluator.tracing.frames import TraceTampered
from evaluator.tracing.kernel_names import (
    Family,
    KernelClass,
    OwnKernels,
    classify,
    display_name,
    impersonations,
    own_kernels,
)
from evaluator.tracing.records import (
    PROTOCOL,
    Activity,
    DroppedRecord,
    ErrorRecord,
    KernelFlag,
    KernelRecord,
    MarkFlag,
    MarkRecord,
    MemcpyRecord,
    MemsetRecord,
    Record,
    StartFlag,
    StartRecord,
)
from evaluator.tracing.tags import Edge, WindowKind, parse_tag

# Ops (ALLOW_TORCH_OPS) whose kernels come from library families rather than ATen's own.
MATMUL_OPS = frozenset({"mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "addmv", "mv", "dot", "vdot",
                        "_scaled_mm", "einsum", "tensordot", "inner", "outer", "addr"})
CONV_OPS = frozenset({"convolution", "_convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                      "conv_transpose2d", "conv_transpose3d", "cudnn_convolution"})
# Allocation, view, copy and cast ops (the runtime guards' ALLOWED_ATEN_OPS): their kernels are ATen memory kernels.
_MEMORY_OPS = frozenset({"empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
                         "full_like", "fill_", "zero_", "copy_", "_to_copy", "to", "clone", "contiguous"})
_HOST_COPY_KINDS = {1: "host to device", 2: "device to host", 3: "host to array", 4: "array to host",
                    11: "host to host"}  # CUpti_ActivityMemcpyKind


class Severity(str, enum.Enum):
    FAIL = "fail"  # evidence of cheating or of a trace that cannot be trusted: reject
    WARN = "warn"  # worth showing, not a reason to reject on its own
    INFO = "info"


class FindingKind(str, enum.Enum):
    TAMPERED = "tampered"
    NOT_TRACED = "not_traced"  # no START record: the shim was not loaded or could not read its key
    TRACING_INACTIVE = "tracing_inactive"  # loaded, but CUPTI is not recording (see its ERROR records)
    PROTOCOL = "protocol"
    DROPPED = "dropped"
    BAD_MARKS = "bad_marks"
    MISSING_WINDOW = "missing_window"
    CLOCK = "clock"
    FOREIGN_KERNELS = "foreign_kernels"
    OFF_STREAM = "off_stream"
    NO_OWN_KERNEL = "no_own_kernel"
    TIMING_MISMATCH = "timing_mismatch"
    HOST_COPIES = "host_copies"
    ACCESS_POLICY = "access_policy"
    IMPERSONATION = "impersonation"
    UNTIMED_TRIAL = "untimed_trial"
    STREAM_UNKNOWN = "stream_unknown"
    OUTSIDE_WINDOWS = "outside_windows"
    INCOMPLETE_RECORDS = "incomplete_records"
    BOOKKEEPING = "bookkeeping"  # small library kernels taking a small share of a call (allowed, reported)


@dataclass(frozen=True)
class WindowRef:
    kind: WindowKind
    index: int

    def describe(self) -> str:
        return f"forward call {self.index}" if self.kind is WindowKind.FORWARD else f"timed trial {self.index}"


@dataclass(frozen=True)
class Finding:
    kind: FindingKind
    severity: Severity
    message: str  # one sentence a person can act on
    window: WindowRef | None = None
    names: tuple[str, ...] = ()  # readable kernel names involved, when any


@dataclass(frozen=True)
class KernelPolicy:
    """Which kernels a forward call may run: the candidate's own, and the families its task allows."""

    own: OwnKernels
    allowed: frozenset[Family]

    def permits(self, cls: KernelClass) -> bool:
        return cls.own or cls.family in self.allowed


def _op_name(op: str) -> str:
    parts = op.split(".")
    if parts[0] in ("aten", "torch") and len(parts) > 1:
        return parts[1]
    return parts[0]


def allowed_families(allow_torch_ops: Iterable[str]) -> frozenset[Family]:
    """ATen memory kernels always; cuBLAS/CUTLASS for matmul ops; cuDNN for convolutions; ATen compute for any
    other compute op the task allows."""
    allowed = {Family.ATEN_MEMORY}
    for op in map(_op_name, allow_torch_ops):
        if op in MATMUL_OPS:
            allowed |= {Family.CUBLAS, Family.CUTLASS}
        elif op in CONV_OPS:
            allowed |= {Family.CUDNN, Family.CUTLASS, Family.ATEN_COMPUTE}
        elif op not in _MEMORY_OPS:
            allowed.add(Family.ATEN_COMPUTE)
    return frozenset(allowed)


def policy_for(candidate_source: str, allow_torch_ops: Iterable[str] = ()) -> tuple[KernelPolicy, list[Finding]]:
    """The kernel policy of one candidate, and a finding for each kernel name that impersonates a library."""
    own = own_kernels(candidate_source)
    findings = [
        Finding(FindingKind.IMPERSONATION, Severity.FAIL,
                f"the candidate names a kernel {name!r}, which is how {rule.label} kernels are named: its launches "
                "would count as that library's; rename the kernel", names=(name,))
        for name, rule in impersonations(own)
    ]
    return KernelPolicy(own, allowed_families(allow_torch_ops)), findings


@dataclass(frozen=True)
class Expected:
    """The windows the harness says it opened (indices), and the event-timed figure of each trial (ms).

    ``trial_preamble``: how many launches the harness makes between a trial's previous window and its BEGIN (the
    input rescaling, the L2 flush, the busy-wait). Only used when the trace has no launch (queued) times: a trial
    then spans from the previous window's END (the device is idle there) to its own END, and its first
    ``trial_preamble`` launches by correlation id (CUPTI numbers API calls in order) are the harness's."""

    forward: tuple[int, ...] = ()
    trials: tuple[int, ...] = ()
    trial_ms: Mapping[int, float] = field(default_factory=dict)
    trial_preamble: int = 0
    # Input elements of the call each window holds (forward index, trial index): what bookkeeping is measured
    # against. A window not listed gets only the floor.
    forward_elements: Mapping[int, int] = field(default_factory=dict)
    trial_elements: Mapping[int, int] = field(default_factory=dict)

    def elements(self, ref: WindowRef) -> int:
        table = self.forward_elements if ref.kind is WindowKind.FORWARD else self.trial_elements
        return int(table.get(ref.index, 0))


@dataclass(frozen=True)
class Margins:
    """How far the traced busy time of a trial may exceed its event-timed interval (clock skew, event latency)."""

    relative: float = 0.05
    absolute_ms: float = 0.005


@dataclass(frozen=True)
class Window:
    ref: WindowRef
    begin: MarkRecord
    end: MarkRecord
    stream_id: int | None  # CUPTI id of the harness's stream (None: the shim could not resolve it)
    activities: tuple[Activity, ...] = ()


@dataclass(frozen=True)
class TrialTiming:
    index: int
    event_ms: float | None
    busy_ms: float  # union of the intervals of the trial's kernels, copies and memsets
    span_ms: float  # first start to last end
    kernels: int


@dataclass(frozen=True)
class Judgement:
    findings: tuple[Finding, ...]
    windows: tuple[Window, ...]
    trial_timings: tuple[TrialTiming, ...]
    outside: int  # activities launched outside every window (the harness's own work, mostly)

    @property
    def failed(self) -> bool:
        return any(f.severity is Severity.FAIL for f in self.findings)

    @property
    def failures(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity is Severity.FAIL)


# --- windows ---

def launch_time(activity: Activity) -> int:
    """When the activity was launched on the host (kernels with a queued time) or else when it started."""
    if isinstance(activity, KernelRecord) and activity.queued:
        return activity.queued
    return activity.start


@dataclass(frozen=True)
class WindowSplit:
    windows: tuple[Window, ...]
    outside: tuple[Activity, ...]
    findings: tuple[Finding, ...]


def split_windows(records: Sequence[Record], trial_preamble: int = 0) -> WindowSplit:
    """Pair BEGIN/END marks into windows and place every activity in the window it was launched in."""
    findings: list[Finding] = []
    windows: list[Window] = []
    seen: set[WindowRef] = set()
    open_mark: tuple[WindowRef, MarkRecord] | None = None
    bad: list[str] = []
    marks = [r for r in records if isinstance(r, MarkRecord)]
    for mark in marks:
        tag = parse_tag(mark.tag)
        if tag is None:
            bad.append(f"record {mark.seq} has tag {mark.tag:#x}, which the harness never writes")
            continue
        ref = WindowRef(tag.kind, tag.index)
        if tag.edge is Edge.BEGIN:
            if open_mark is not None:
                bad.append(f"{ref.describe()} begins (record {mark.seq}) inside {open_mark[0].describe()}")
            if ref in seen:
                bad.append(f"{ref.describe()} begins twice (record {mark.seq})")
            open_mark = (ref, mark)
            continue
        if open_mark is None or open_mark[0] != ref:
            bad.append(f"{ref.describe()} ends (record {mark.seq}) without having begun")
            open_mark = None
            continue
        begin = open_mark[1]
        open_mark = None
        if mark.timestamp < begin.timestamp:
            bad.append(f"{ref.describe()} ends before it begins (records {begin.seq}, {mark.seq})")
            continue
        if ref in seen:
            continue
        seen.add(ref)
        stream = None if (begin.flags & MarkFlag.STREAM_UNKNOWN) else begin.stream_id
        windows.append(Window(ref, begin, mark, stream))
    if open_mark is not None:
        bad.append(f"{open_mark[0].describe()} never ends (the trace stops inside it)")
    if bad:
        findings.append(Finding(FindingKind.BAD_MARKS, Severity.FAIL,
                                "the harness's window marks are not what it wrote (" + "; ".join(bad[:5]) +
                                "): something in the candidate process wrote marks, or the trace was cut short"))
    activities = [r for r in records if isinstance(r, KernelRecord | MemcpyRecord | MemsetRecord)]
    if activities and any(m.flags & MarkFlag.FALLBACK_CLOCK for m in marks):
        findings.append(Finding(FindingKind.CLOCK, Severity.FAIL,
                                "some window marks were taken with the fallback clock while CUPTI recorded activity: "
                                "kernels cannot be placed in windows; the tracer lost CUPTI mid-run"))
    ordered = sorted(windows, key=lambda w: w.begin.timestamp)
    launch_times = any(isinstance(r, StartRecord) and r.flags & StartFlag.LATENCY for r in records)
    by_preamble = bool(trial_preamble) and not launch_times
    # Where each window's launches may start: from its BEGIN; without launch times a trial reaches back to the
    # previous window's END (the device was idle there), so that its preamble is caught wherever it started.
    lows = []
    previous_end = 0
    for w in ordered:
        lows.append(previous_end + 1 if by_preamble and w.ref.kind is WindowKind.TRIAL else w.begin.timestamp)
        previous_end = w.end.timestamp
    placed: dict[WindowRef, list[Activity]] = {w.ref: [] for w in ordered}
    outside: list[Activity] = []
    for activity in activities:
        t = launch_time(activity)
        i = bisect.bisect_right(lows, t) - 1
        if i >= 0 and t <= ordered[i].end.timestamp:
            placed[ordered[i].ref].append(activity)
        else:
            outside.append(activity)
    if by_preamble:
        for w in ordered:
            if w.ref.kind is WindowKind.TRIAL:  # the harness's launches come first (lowest correlation ids)
                by_launch = sorted(placed[w.ref], key=lambda a: a.correlation)
                outside += by_launch[:trial_preamble]
                placed[w.ref] = sorted(by_launch[trial_preamble:], key=lambda a: a.seq)
    result = tuple(Window(w.ref, w.begin, w.end, w.stream_id, tuple(placed[w.ref])) for w in windows)
    return WindowSplit(result, tuple(outside), tuple(findings))


# --- per-window checks ---

def _busy_ns(activities: Iterable[Activity]) -> tuple[int, int]:
    """(union of [start, end] intervals, first start to last end) in ns, skipping incomplete records."""
    spans = sorted((a.start, a.end) for a in activities if a.start and a.end >= a.start)
    if not spans:
        return 0, 0
    busy, cur_start, cur_end = 0, None, None
    for s, e in spans:
        if cur_end is None or s > cur_end:
            if cur_end is not None:
                busy += cur_end - cur_start  # type: ignore[operator]
            cur_start, cur_end = s, e
        else:
            cur_end = max(cur_end, e)
    if cur_end is not None:
        busy += cur_end - cur_start  # type: ignore[operator]
    return busy, max(e for _, e in spans) - spans[0][0]


def _activity_name(activity: Activity) -> str:
    if isinstance(activity, KernelRecord):
        return f"kernel {display_name(activity.name, 80)}"
    if isinstance(activity, MemcpyRecord):
        return f"copy of {activity.bytes} bytes"
    return f"memset of {activity.bytes} bytes"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def check_window(window: Window, policy: KernelPolicy, input_elements: int = 0) -> list[Finding]:
    """Foreign kernels, work off the harness's stream, host copies, persisting-L2 windows, no own kernel.
    ``input_elements``: the elements of the call's inputs, which bound what counts as bookkeeping."""
    findings: list[Finding] = []
    where = window.ref.describe()
    kernels = [a for a in window.activities if isinstance(a, KernelRecord)]
    classes = [(k, classify(k.name, policy.own)) for k in kernels]
    foreign = [(k, c) for k, c in classes if not policy.permits(c)]
    bookkeeping, foreign = _split_bookkeeping(foreign, kernels, input_elements)
    if bookkeeping:
        names = tuple(dict.fromkeys(c.display for _, c in bookkeeping))
        threads = sum(_threads(k) for k, _ in bookkeeping)
        findings.append(Finding(
            FindingKind.BOOKKEEPING, Severity.INFO,
            f"{where} ran {_plural(len(bookkeeping), 'small library kernel')} ({', '.join(names[:3])}; "
            f"{threads} threads for {input_elements} input elements): bookkeeping (a final reduction, an input "
            "check), allowed", window.ref, names))
    if foreign:
        shown: dict[str, str] = {}
        for _, c in foreign:
            shown.setdefault(c.display, c.label)
        listed = ", ".join(f"{name} ({label})" for name, label in list(shown.items())[:4])
        more = f" and {len(shown) - 4} more" if len(shown) > 4 else ""
        findings.append(Finding(
            FindingKind.FOREIGN_KERNELS, Severity.FAIL,
            f"{where} ran {_plural(len(foreign), 'kernel')} that {'is' if len(foreign) == 1 else 'are'} not the "
            f"candidate's: {listed}{more}: "
            "do the math in your own kernels", window.ref, tuple(shown)))
    if window.stream_id is not None:
        off = [a for a in window.activities if a.stream != window.stream_id]
        if off:
            streams = sorted({a.stream for a in off})
            findings.append(Finding(
                FindingKind.OFF_STREAM, Severity.FAIL,
                f"{where} ran {_plural(len(off), 'operation')} on stream {', '.join(map(str, streams))}, not on the "
                f"harness's stream {window.stream_id} (first: {_activity_name(off[0])}): work there escapes the "
                "timer; launch everything on torch.cuda.current_stream()", window.ref))
    elif window.activities:
        findings.append(Finding(FindingKind.STREAM_UNKNOWN, Severity.WARN,
                                f"{where}: the harness's stream id was not resolved, streams were not checked",
                                window.ref))
    host = [a for a in window.activities if isinstance(a, MemcpyRecord) and a.copy_kind in _HOST_COPY_KINDS]
    if host:
        total = sum(a.bytes for a in host)
        kinds = sorted({_HOST_COPY_KINDS[a.copy_kind] for a in host})
        findings.append(Finding(FindingKind.HOST_COPIES, Severity.WARN,
                                f"{where} copied {total} bytes between host and device ({', '.join(kinds)}): the "
                                "math belongs on the GPU; keep tensors on the device", window.ref))
    policy_windows = [k for k in kernels if k.flags & KernelFlag.ACCESS_POLICY]
    if policy_windows:
        findings.append(Finding(FindingKind.ACCESS_POLICY, Severity.FAIL,
                                f"{where} launched {_plural(len(policy_windows), 'kernel')} with a persisting-L2 "
                                "access-policy window (data kept in L2 across the flush): remove it", window.ref))
    if not any(c.own for _, c in classes):
        findings.append(Finding(
            FindingKind.NO_OWN_KERNEL, Severity.FAIL,
            f"{where} launched none of the candidate's kernels ({_plural(len(kernels), 'kernel')} traced; a launch "
            "on an empty grid records nothing): every call must run its own kernel", window.ref))
    incomplete = [a for a in window.activities if not a.start or a.end < a.start]
    if incomplete:
        findings.append(Finding(FindingKind.INCOMPLETE_RECORDS, Severity.WARN,
                                f"{where}: {_plural(len(incomplete), 'record')} without timestamps (flushed before "
                                "the device finished?)", window.ref))
    return findings


# Library kernels that are bookkeeping, not the op (the rule of the CPU's op recorder: torch work on tensors at most
# 1/BOOKKEEPING_FRACTION of the call's inputs). Below Python the trace knows no tensor sizes, but it knows how many
# threads each kernel launched, which ATen sizes from the tensor it works on (an element-wise kernel runs one thread
# per few elements; a reduction over the whole input fills the GPU): together the library kernels of a call may
# launch at most max(BOOKKEEPING_FLOOR_THREADS, input elements / BOOKKEEPING_FRACTION) threads. The floor is what a
# handful of kernels on tiny tensors launch (one block of up to 1024 threads each); a softmax or a reduction over the
# inputs of a real-sized case is far past it. They may also take at most BOOKKEEPING_MAX_SHARE of the call's kernel
# time. Threads bound the work of element-wise kernels only: a reduction (a norm, var_mean, a full sum) or a
# block-per-row softmax over rows of 64K+ columns covers hundreds of elements per thread and stays under input/64
# threads while doing the op's work, so the share applies at every call length to kernels past the floor. Below
# BOOKKEEPING_TIMED_FROM_NS of kernel time, launch latency is all there is to measure for kernels on tiny tensors:
# within the floor they may take up to BOOKKEEPING_LATENCY_NS together (a handful of launches), whatever the share.
BOOKKEEPING_FRACTION = 64  # evaluator.sandboxed.guards.SMALL_FRACTION: the parent never imports that side
BOOKKEEPING_FLOOR_THREADS = 16 * 1024
BOOKKEEPING_MAX_SHARE = 0.10
BOOKKEEPING_TIMED_FROM_NS = 200_000
BOOKKEEPING_LATENCY_NS = 32_000


def _threads(kernel: KernelRecord) -> int:
    gx, gy, gz = kernel.grid
    bx, by, bz = kernel.block
    return gx * gy * gz * bx * by * bz


def bookkeeping_threads(input_elements: int) -> int:
    """How many threads a call's library kernels may launch together and still count as bookkeeping (pure)."""
    return max(BOOKKEEPING_FLOOR_THREADS, int(input_elements) // BOOKKEEPING_FRACTION)


def bookkeeping_allowance_ns(call_ns: int, threads: int) -> float:
    """Kernel time the library kernels of a call (``threads`` launched together) may take as bookkeeping (pure)."""
    share = BOOKKEEPING_MAX_SHARE * call_ns
    if call_ns < BOOKKEEPING_TIMED_FROM_NS and threads <= BOOKKEEPING_FLOOR_THREADS:
        return max(share, BOOKKEEPING_LATENCY_NS)
    return share


def _split_bookkeeping(foreign: list, kernels: list[KernelRecord], input_elements: int) -> tuple[list, list]:
    """(bookkeeping, still foreign) among the foreign kernels of one window: all of the ATen/CUDA-library kernels
    count as bookkeeping together, or none does."""
    small = [(k, c) for k, c in foreign if c.family in (Family.ATEN_COMPUTE, Family.CUDA_LIBRARY)]
    threads = sum(_threads(k) for k, _ in small)
    if not small or threads > bookkeeping_threads(input_elements):
        return [], foreign
    total, _ = _busy_ns(kernels)
    spent, _ = _busy_ns(k for k, _ in small)
    if spent > bookkeeping_allowance_ns(total, threads):
        return [], foreign
    return small, [(k, c) for k, c in foreign if (k, c) not in small]


def trial_timing(window: Window, event_ms: float | None) -> TrialTiming:
    busy, span = _busy_ns(window.activities)
    kernels = sum(isinstance(a, KernelRecord) for a in window.activities)
    return TrialTiming(window.ref.index, event_ms, busy / 1e6, span / 1e6, kernels)


def check_trial(timing: TrialTiming, margins: Margins) -> list[Finding]:
    ref = WindowRef(WindowKind.TRIAL, timing.index)
    if timing.event_ms is None:
        return [Finding(FindingKind.UNTIMED_TRIAL, Severity.WARN,
                        f"{ref.describe()} has no event-timed figure to compare with", ref)]
    limit = timing.event_ms * (1 + margins.relative) + margins.absolute_ms
    if timing.busy_ms > limit:
        return [Finding(
            FindingKind.TIMING_MISMATCH, Severity.FAIL,
            f"{ref.describe()}: the traced kernels were busy {timing.busy_ms * 1000:.1f} us but the events timed "
            f"{timing.event_ms * 1000:.1f} us (allowed up to {limit * 1000:.1f} us): work ran outside the timed "
            "interval (another stream or after the end event); keep all work on the current stream", ref)]
    return []


# --- the whole trace ---

def check_tracer(records: Sequence[Record], require_active: bool) -> list[Finding]:
    """Was the shim loaded and recording? ERROR texts explain why not."""
    starts = [r for r in records if isinstance(r, StartRecord)]
    errors = [r for r in records if isinstance(r, ErrorRecord)]
    severity = Severity.FAIL if require_active else Severity.INFO
    if not starts:
        return [Finding(FindingKind.NOT_TRACED, severity,
                        "the candidate process sent no tracer START record: the trace shim was not preloaded or "
                        "could not read its key (check LD_PRELOAD and the inherited descriptors)")]
    start = starts[0]
    findings: list[Finding] = []
    if len(starts) > 1:
        findings.append(Finding(FindingKind.BAD_MARKS, Severity.FAIL, "the trace holds two START records"))
    if start.protocol != PROTOCOL:
        findings.append(Finding(FindingKind.PROTOCOL, Severity.FAIL,
                                f"the shim speaks trace protocol {start.protocol}, the parent {PROTOCOL}: rebuild it"))
    if not start.flags & StartFlag.ACTIVE:
        why = "; ".join(f"{e.stage.name.lower()}: {e.text}" for e in errors) or "no reason recorded"
        findings.append(Finding(FindingKind.TRACING_INACTIVE, severity,
                                f"kernel tracing is off in the candidate process ({why})"))
    return findings


def judge(records: Sequence[Record], policy: KernelPolicy, expected: Expected, *,
          tampered: TraceTampered | None = None, require_active: bool = True,
          margins: Margins = Margins()) -> Judgement:
    """Every finding about one candidate process's trace."""
    findings: list[Finding] = []
    if tampered is not None:
        findings.append(Finding(FindingKind.TAMPERED, Severity.FAIL, tampered.message))
    findings += check_tracer(records, require_active)
    dropped = sum(r.count for r in records if isinstance(r, DroppedRecord))
    if dropped:
        findings.append(Finding(FindingKind.DROPPED, Severity.FAIL,
                                f"CUPTI dropped {dropped} activity records (out of buffer space): the trace is "
                                "incomplete, so it proves nothing; evaluate again"))
    split = split_windows(records, expected.trial_preamble)
    findings += split.findings
    present = {w.ref for w in split.windows}
    wanted = ([WindowRef(WindowKind.FORWARD, i) for i in expected.forward]
              + [WindowRef(WindowKind.TRIAL, i) for i in expected.trials])
    wanted_set = set(wanted)
    missing = [ref for ref in wanted if ref not in present]
    if missing:
        listed = ", ".join(r.describe() for r in missing[:5]) + (" ..." if len(missing) > 5 else "")
        findings.append(Finding(FindingKind.MISSING_WINDOW, Severity.FAIL,
                                f"the trace has no record of {listed}: the trace channel stopped (closed or "
                                "overwritten in the candidate process) before the harness finished"))
    extra = sorted(present - wanted_set, key=lambda r: (r.kind, r.index))
    if extra:
        findings.append(Finding(FindingKind.BAD_MARKS, Severity.FAIL,
                                f"the trace holds windows the harness did not open ({extra[0].describe()} ...): "
                                "something in the candidate process wrote marks"))
    timings: list[TrialTiming] = []
    for window in split.windows:
        if window.ref not in wanted_set:
            continue
        findings += check_window(window, policy, expected.elements(window.ref))
        if window.ref.kind is WindowKind.TRIAL:
            timing = trial_timing(window, expected.trial_ms.get(window.ref.index))
            timings.append(timing)
            findings += check_trial(timing, margins)
    own_outside = [a for a in split.outside
                   if isinstance(a, KernelRecord) and classify(a.name, policy.own).own]
    if own_outside:
        findings.append(Finding(FindingKind.OUTSIDE_WINDOWS, Severity.INFO,
                                f"{_plural(len(own_outside), 'launch')} of the candidate's kernels happened outside "
                                "every forward call (at import, or from another thread)"))
    return Judgement(tuple(findings), split.windows, tuple(timings), len(split.outside))
