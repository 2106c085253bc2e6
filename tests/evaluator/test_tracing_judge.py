"""The judge on synthetic traces: records built in the real frame format with a real MAC, parsed back, and
every finding produced (and not produced for an honest trace)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field, replace

import pytest

from evaluator.tracing.judge import (
    Expected,
    FindingKind,
    Judgement,
    KernelPolicy,
    Margins,
    Severity,
    allowed_families,
    judge,
    policy_for,
    split_windows,
)
from evaluator.tracing.records import (
    DroppedRecord,
    ErrorRecord,
    ErrorStage,
    KernelFlag,
    KernelRecord,
    MarkFlag,
    MarkRecord,
    MemcpyRecord,
    MemsetRecord,
    StartFlag,
    StartRecord,
    encode_trace,
    parse_trace,
)
from evaluator.tracing.tags import Edge, WindowKind, mark_tag, parse_tag

CANDIDATE = '''
import triton
import triton.language as tl

@triton.jit
def rms_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass
'''
POLICY, _ = policy_for(CANDIDATE)
HARNESS_STREAM = 7
FILL = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_"
SOFTMAX = "_ZN43_GLOBAL__N__b6de9c8c_10_SoftMax_cu_9f978f6320softmax_warp_forwardIfffLi8ELb0ELb0EEEvPT0_PKT_iiiPKbib"
REDUCE = "_ZN2at6native13reduce_kernelILi128ELi4ENS0_8ReduceOpIfNS0_14func_wrapper_tIfZNS0"
GEMM = ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_"
        "kernel__5x_cublas")
SPIN = "_ZN2at4cuda40_GLOBAL__N__758183f4_8_Sleep_cu_088d913f11spin_kernelEl"


@dataclass
class Trace:
    """Builds a trace the way the shim and the harness would write it, on a fake clock (ns)."""

    now: int = 1_000_000
    records: list = field(default_factory=list)
    correlation: int = 0
    start_flags: StartFlag = StartFlag.CUPTI_LOADED | StartFlag.ACTIVE | StartFlag.LATENCY

    def __post_init__(self) -> None:
        self.add(StartRecord(0, 1, self.start_flags, 130001, 130001, 1234))

    def add(self, record) -> None:
        self.records.append(type(record)(len(self.records), *[getattr(record, f) for f in record.__slots__[1:]]))

    def tick(self, ns: int = 1000) -> int:
        self.now += ns
        return self.now

    def mark(self, kind: WindowKind, edge: Edge, index: int, stream: int = HARNESS_STREAM,
             flags: MarkFlag = MarkFlag(0)) -> None:
        self.add(MarkRecord(0, mark_tag(kind, edge, index), self.tick(), 0, stream, flags))

    def kernel(self, name: str, stream: int = HARNESS_STREAM, duration: int = 2000, queued: int | None = None,
               start: int | None = None, flags: KernelFlag = KernelFlag(0), grid: tuple = (64, 1, 1),
               block: tuple = (128, 1, 1)) -> None:
        self.correlation += 1
        launched = self.tick(100) if queued is None else queued
        begin = (launched + 500) if start is None else start
        self.add(KernelRecord(0, begin, begin + duration, launched, 0, 1, stream, self.correlation, 0, grid,
                              block, 0, 0, 32, flags, 10, name))
        self.now = max(self.now, begin + duration)

    def copy(self, nbytes: int, kind: int = 8, stream: int = HARNESS_STREAM) -> None:
        self.correlation += 1
        begin = self.tick(200)
        self.add(MemcpyRecord(0, begin, begin + 300, nbytes, 0, 1, stream, self.correlation, 0, kind, 1, 1, 0,
                              False, 0, 0))

    def forward(self, index: int, *kernels: str, stream: int = HARNESS_STREAM) -> None:
        self.mark(WindowKind.FORWARD, Edge.BEGIN, index)
        for name in kernels:
            self.kernel(name, stream=stream)
        self.mark(WindowKind.FORWARD, Edge.END, index)

    def trial(self, index: int, *kernels: str, preamble: bool = True) -> None:
        if preamble:  # the harness's flush and busy-wait, queued before the window opens, running inside it
            queued = self.tick(50)
            self.kernel(FILL, queued=queued, start=self.now + 5000, duration=3000)
            self.kernel(SPIN, queued=queued + 10, start=self.now, duration=200_000)
            self.now = queued + 20
        self.mark(WindowKind.TRIAL, Edge.BEGIN, index)
        self.now += 300_000
        for name in kernels:
            self.kernel(name)
        self.mark(WindowKind.TRIAL, Edge.END, index)

    def judge(self, expected: Expected, policy: KernelPolicy = POLICY, **kwargs) -> Judgement:
        key = secrets.token_bytes(16)
        parsed = parse_trace(key, encode_trace(key, self.records))  # through real frames and MACs
        assert parsed.tampered is None
        return judge(parsed.records, policy, expected, **kwargs)


def kinds(judgement: Judgement, severity: Severity | None = None) -> set[FindingKind]:
    return {f.kind for f in judgement.findings if severity is None or f.severity is severity}


def honest() -> tuple[Trace, Expected]:
    t = Trace()
    t.kernel("rms_kernel")  # a warm-up call at import: outside every window
    t.forward(0, "rms_kernel")
    t.forward(1, FILL, "rms_kernel")
    t.trial(0, "rms_kernel")
    t.trial(1, "rms_kernel")
    return t, Expected(forward=(0, 1), trials=(0, 1), trial_ms={0: 0.0025, 1: 0.0025})


def test_honest_trace_has_no_failures():
    t, expected = honest()
    result = t.judge(expected)
    assert not result.failed, result.findings
    assert kinds(result) == {FindingKind.OUTSIDE_WINDOWS}
    assert [w.ref.describe() for w in result.windows] == ["forward call 0", "forward call 1", "timed trial 0",
                                                           "timed trial 1"]
    # the flush and busy-wait queued before each trial's BEGIN are not the trial's, although they run inside it
    assert [tt.kernels for tt in result.trial_timings] == [1, 1]
    assert result.trial_timings[0].busy_ms == pytest.approx(0.002)


def test_tags_round_trip():
    tag = mark_tag(WindowKind.TRIAL, Edge.END, 12345)
    parsed = parse_tag(tag)
    assert (parsed.kind, parsed.edge, parsed.index) == (WindowKind.TRIAL, Edge.END, 12345)
    assert parse_tag(0) is None and parse_tag(0xFF << 56) is None
    with pytest.raises(ValueError):
        mark_tag(WindowKind.FORWARD, Edge.BEGIN, 1 << 48)


def test_foreign_kernels_are_named_with_their_family():
    t = Trace()
    t.forward(3, "rms_kernel", REDUCE, SOFTMAX, REDUCE)
    result = t.judge(Expected(forward=(3,)))
    (finding,) = [f for f in result.findings if f.kind is FindingKind.FOREIGN_KERNELS]
    assert finding.severity is Severity.FAIL
    assert finding.message.startswith("forward call 3 ran 3 kernels that are not the candidate's: "
                                      "at::native::reduce_kernel<...> (ATen compute), ")
    assert "(anonymous namespace in SoftMax.cu)::softmax_warp_forward<...> (ATen compute (SoftMax.cu))" in \
        finding.message
    assert finding.message.endswith("do the math in your own kernels")
    assert finding.names == ("at::native::reduce_kernel<...>",
                             "(anonymous namespace in SoftMax.cu)::softmax_warp_forward<...>")


def test_library_kernels_pass_only_when_the_task_allows_matmul():
    t = Trace()
    t.forward(0, GEMM, "rms_kernel")
    assert FindingKind.FOREIGN_KERNELS in kinds(t.judge(Expected(forward=(0,))))
    allowing = KernelPolicy(POLICY.own, allowed_families(["aten.addmm"]))
    assert not t.judge(Expected(forward=(0,)), allowing).failed


def test_busy_wait_in_a_forward_call_is_foreign():
    t = Trace()
    t.forward(0, SPIN, "rms_kernel")
    (finding,) = [f for f in t.judge(Expected(forward=(0,))).findings if f.kind is FindingKind.FOREIGN_KERNELS]
    assert "torch.cuda._sleep busy-wait" in finding.message and "1 kernel that is not" in finding.message


def test_work_off_the_harness_stream():
    t = Trace()
    t.forward(0, "rms_kernel")
    t.mark(WindowKind.FORWARD, Edge.BEGIN, 1)
    t.kernel("rms_kernel")
    t.copy(1024, stream=14)
    t.mark(WindowKind.FORWARD, Edge.END, 1)
    result = t.judge(Expected(forward=(0, 1)))
    (finding,) = [f for f in result.findings if f.kind is FindingKind.OFF_STREAM]
    assert finding.window.index == 1
    assert "on stream 14, not on the harness's stream 7 (first: copy of 1024 bytes)" in finding.message


def test_a_forward_call_without_an_own_kernel():
    t = Trace()
    t.forward(0, FILL)
    t.forward(1)
    result = t.judge(Expected(forward=(0, 1)))
    no_own = [f for f in result.findings if f.kind is FindingKind.NO_OWN_KERNEL]
    assert [f.window.index for f in no_own] == [0, 1]
    assert "a launch on an empty grid records nothing" in no_own[1].message


def test_hidden_work_makes_the_trace_disagree_with_the_timer():
    t = Trace()
    t.trial(0, "rms_kernel")
    t.mark(WindowKind.TRIAL, Edge.BEGIN, 1)
    t.kernel("rms_kernel", duration=2000)
    t.kernel("rms_kernel", stream=HARNESS_STREAM, duration=500_000)  # 0.5 ms the events did not see
    t.mark(WindowKind.TRIAL, Edge.END, 1)
    result = t.judge(Expected(trials=(0, 1), trial_ms={0: 0.0021, 1: 0.1}))
    (finding,) = [f for f in result.findings if f.kind is FindingKind.TIMING_MISMATCH]
    assert finding.window.index == 1
    assert "busy 502.0 us but the events timed 100.0 us" in finding.message
    timing = {tt.index: tt for tt in result.trial_timings}
    assert timing[1].busy_ms == pytest.approx(0.502) and timing[1].event_ms == 0.1


def test_timing_within_margin_passes():
    t = Trace()
    t.trial(0, "rms_kernel")
    assert not t.judge(Expected(trials=(0,), trial_ms={0: 0.0019}), margins=Margins(0.05, 0.0005)).failed
    assert FindingKind.TIMING_MISMATCH in kinds(
        t.judge(Expected(trials=(0,), trial_ms={0: 0.0019}), margins=Margins(0.0, 0.0)))


def test_a_trial_without_a_timed_figure_is_flagged():
    t = Trace()
    t.trial(0, "rms_kernel")
    assert FindingKind.UNTIMED_TRIAL in kinds(t.judge(Expected(trials=(0,))), Severity.WARN)


def test_missing_windows_mean_the_channel_stopped():
    t = Trace()
    t.forward(0, "rms_kernel")
    result = t.judge(Expected(forward=(0, 1, 2)))
    (finding,) = [f for f in result.findings if f.kind is FindingKind.MISSING_WINDOW]
    assert "forward call 1, forward call 2" in finding.message and finding.severity is Severity.FAIL


@pytest.mark.parametrize("build, text", [
    (lambda t: t.mark(WindowKind.FORWARD, Edge.END, 0), "without having begun"),
    (lambda t: (t.mark(WindowKind.FORWARD, Edge.BEGIN, 0), t.mark(WindowKind.FORWARD, Edge.BEGIN, 1)),
     "begins (record 2) inside forward call 0"),
    (lambda t: t.mark(WindowKind.FORWARD, Edge.BEGIN, 0), "never ends"),
    (lambda t: t.add(MarkRecord(0, 0xDEAD, t.tick(), 0, 7, MarkFlag(0))), "which the harness never writes"),
    (lambda t: (t.forward(0, "rms_kernel"), t.forward(0, "rms_kernel")), "begins twice"),
])
def test_marks_the_harness_did_not_write(build, text):
    t = Trace()
    build(t)
    (finding,) = [f for f in t.judge(Expected(forward=(0,))).findings
                  if f.kind is FindingKind.BAD_MARKS and "window marks" in f.message]
    assert text in finding.message and finding.severity is Severity.FAIL


def test_a_window_ending_before_it_begins():
    t = Trace()
    t.mark(WindowKind.FORWARD, Edge.BEGIN, 0)
    t.add(MarkRecord(0, mark_tag(WindowKind.FORWARD, Edge.END, 0), 5, 0, 7, MarkFlag(0)))
    (finding,) = [f for f in t.judge(Expected()).findings if f.kind is FindingKind.BAD_MARKS]
    assert "ends before it begins" in finding.message


def test_extra_windows_are_marks_the_harness_did_not_write():
    t = Trace()
    t.forward(0, "rms_kernel")
    t.forward(9, "rms_kernel")
    (finding,) = [f for f in t.judge(Expected(forward=(0,))).findings if f.kind is FindingKind.BAD_MARKS]
    assert "forward call 9" in finding.message


def test_tracer_not_loaded_or_inactive():
    t = Trace()
    t.records.clear()
    t.forward(0)
    result = t.judge(Expected(forward=(0,)))
    assert FindingKind.NOT_TRACED in kinds(result, Severity.FAIL)
    assert FindingKind.NOT_TRACED in kinds(t.judge(Expected(forward=(0,)), require_active=False), Severity.INFO)

    cpu = Trace(start_flags=StartFlag.CUPTI_LOADED)
    cpu.records.insert(0, ErrorRecord(0, ErrorStage.DRIVER, 0, "no CUDA driver (libcuda.so.1: not found)"))
    cpu.records = [type(r)(i, *[getattr(r, f) for f in r.__slots__[1:]]) for i, r in enumerate(cpu.records)]
    result = cpu.judge(Expected(), require_active=False)
    (finding,) = [f for f in result.findings if f.kind is FindingKind.TRACING_INACTIVE]
    assert finding.severity is Severity.INFO and "driver: no CUDA driver" in finding.message
    assert FindingKind.TRACING_INACTIVE in kinds(cpu.judge(Expected()), Severity.FAIL)


def test_protocol_mismatch_and_second_start():
    t = Trace()
    t.add(StartRecord(0, 2, StartFlag.ACTIVE, 1, 1, 1))
    found = kinds(t.judge(Expected()), Severity.FAIL)
    assert FindingKind.BAD_MARKS in found  # two START records
    t = Trace()
    t.records[0] = StartRecord(0, 9, StartFlag.ACTIVE, 1, 1, 1)
    assert FindingKind.PROTOCOL in kinds(t.judge(Expected()), Severity.FAIL)


def test_dropped_records_make_the_trace_inconclusive():
    t, expected = honest()
    t.add(DroppedRecord(0, 12, 0, 7))
    (finding,) = [f for f in t.judge(expected).findings if f.kind is FindingKind.DROPPED]
    assert "dropped 12 activity records" in finding.message and finding.severity is Severity.FAIL


def test_tampering_is_a_failure_and_comes_first():
    from evaluator.tracing.frames import TamperKind, TraceTampered

    t, expected = honest()
    tampered = TraceTampered(TamperKind.BAD_MAC, 120, 4, "frame claims seq 4")
    result = t.judge(expected, tampered=tampered)
    assert result.findings[0].kind is FindingKind.TAMPERED and result.failed


def test_fallback_clock_with_activity_cannot_be_placed():
    t = Trace()
    t.mark(WindowKind.FORWARD, Edge.BEGIN, 0, flags=MarkFlag.FALLBACK_CLOCK)
    t.kernel("rms_kernel")
    t.mark(WindowKind.FORWARD, Edge.END, 0, flags=MarkFlag.FALLBACK_CLOCK)
    assert FindingKind.CLOCK in kinds(t.judge(Expected(forward=(0,))), Severity.FAIL)


def test_unknown_stream_is_a_warning_not_a_pass():
    t = Trace()
    t.mark(WindowKind.FORWARD, Edge.BEGIN, 0, flags=MarkFlag.STREAM_UNKNOWN)
    t.kernel("rms_kernel", stream=99)
    t.mark(WindowKind.FORWARD, Edge.END, 0)
    result = t.judge(Expected(forward=(0,)))
    assert FindingKind.STREAM_UNKNOWN in kinds(result, Severity.WARN)
    assert FindingKind.OFF_STREAM not in kinds(result)


def test_host_copies_access_policy_and_incomplete_records():
    t = Trace()
    t.mark(WindowKind.FORWARD, Edge.BEGIN, 0)
    t.kernel("rms_kernel", flags=KernelFlag.ACCESS_POLICY)
    t.copy(4096, kind=2)  # device to host
    begin = t.tick()
    t.add(MemsetRecord(0, 0, 0, 64, 0, 1, 7, 99, 0, 0, 3, 0))  # flushed before it finished: no timestamps
    t.add(KernelRecord(0, 0, 0, begin, 0, 1, 7, 100, 0, (1, 1, 1), (1, 1, 1), 0, 0, 0, KernelFlag(0), 10,
                       "rms_kernel"))
    t.mark(WindowKind.FORWARD, Edge.END, 0)
    result = t.judge(Expected(forward=(0,)))
    assert FindingKind.HOST_COPIES in kinds(result, Severity.WARN)
    assert FindingKind.ACCESS_POLICY in kinds(result, Severity.FAIL)
    assert FindingKind.INCOMPLETE_RECORDS in kinds(result, Severity.WARN)
    host = next(f for f in result.findings if f.kind is FindingKind.HOST_COPIES)
    assert "copied 4096 bytes between host and device (device to host)" in host.message


def test_kernels_are_placed_by_launch_time_and_by_start_without_it():
    t = Trace()
    queued = t.tick()
    t.mark(WindowKind.FORWARD, Edge.BEGIN, 0)
    t.kernel("rms_kernel", queued=queued, start=t.now + 100)  # launched before BEGIN: not the call's
    t.kernel("rms_kernel", queued=0, start=t.now + 100)  # no queued time: placed by its start
    t.mark(WindowKind.FORWARD, Edge.END, 0)
    split = split_windows(t.records)
    (window,) = split.windows
    assert [k.correlation for k in window.activities] == [2]
    assert [k.correlation for k in split.outside] == [1]


def test_impersonating_names_are_findings_of_the_policy():
    _, findings = policy_for(CANDIDATE.replace("rms_kernel", "sm90_xmma_gemm_bf16bf16_bf16f32"))
    (finding,) = findings
    assert finding.kind is FindingKind.IMPERSONATION and "cuBLAS" in finding.message


@pytest.mark.parametrize("preamble_starts", ["inside", "before"])
def test_without_launch_times_the_trial_preamble_is_set_aside_by_launch_order(preamble_starts: str):
    t = Trace(start_flags=StartFlag.CUPTI_LOADED | StartFlag.ACTIVE)  # CUPTI without queued timestamps
    t.forward(0, "rms_kernel")
    for k in range(2):
        if preamble_starts == "before":  # the GPU was idle: the flush starts before the host reaches BEGIN
            t.kernel(FILL, queued=0, start=t.tick(), duration=3000)
        t.mark(WindowKind.TRIAL, Edge.BEGIN, k)
        if preamble_starts == "inside":
            t.kernel(FILL, queued=0, start=t.tick(), duration=3000)
        t.kernel(SPIN, queued=0, start=t.tick(), duration=200_000)
        t.kernel("rms_kernel", queued=0, start=t.tick())
        t.mark(WindowKind.TRIAL, Edge.END, k)
    expected = Expected(forward=(0,), trials=(0, 1), trial_ms={0: 0.21, 1: 0.21})
    naive = t.judge(expected)
    assert FindingKind.FOREIGN_KERNELS in kinds(naive)  # the busy-wait looks like the candidate's
    result = t.judge(replace(expected, trial_preamble=2))
    assert not result.failed, result.findings
    assert [tt.kernels for tt in result.trial_timings] == [1, 1]
    assert result.trial_timings[0].busy_ms == pytest.approx(0.002)
    forward = next(w for w in result.windows if w.ref.kind is WindowKind.FORWARD)
    assert [a.name for a in forward.activities] == ["rms_kernel"]


# Bookkeeping: what Liger's cross entropy runs beside its kernel (a mask, a count, two bound checks, a final sum)
# against a softmax or a reduction doing the op's work in ATen.
_GLUE = [(REDUCE, (1, 1, 1), (512, 1, 1)), (FILL.replace("FillFunctor", "CompareFunctor"), (1, 1, 1), (128, 1, 1))] * 4


def _call(t: Trace, index: int, own_ns: int, extra: list) -> None:
    t.mark(WindowKind.FORWARD, Edge.BEGIN, index)
    t.kernel("rms_kernel", duration=own_ns, grid=(37, 1, 1))
    for name, grid, block, *ns in extra:
        t.kernel(name, grid=grid, block=block, duration=ns[0] if ns else 3000)
    t.mark(WindowKind.FORWARD, Edge.END, index)


def test_a_few_small_library_kernels_beside_the_candidates_are_bookkeeping_at_every_size():
    t = Trace()
    _call(t, 0, 2000, _GLUE)  # a small case: launch latency dominates, the library kernels take most of the time
    _call(t, 1, 900_000, _GLUE)  # a real-sized case: the candidate's kernel does the work
    result = t.judge(Expected(forward=(0, 1), forward_elements={0: 37_037, 1: 8192 * 32_001}))
    assert not result.failed, [f.message for f in result.failures]
    notes = [f for f in result.findings if f.kind is FindingKind.BOOKKEEPING]
    assert len(notes) == 2 and "bookkeeping" in notes[0].message and "37037 input elements" in notes[0].message


def test_library_kernels_launching_more_threads_than_bookkeeping_needs_are_foreign():
    t = Trace()  # an element-wise pass over a 1M-element input: far more threads than 1/64 of the inputs
    _call(t, 0, 2000, [(SOFTMAX, (2048, 1, 1), (128, 1, 1))])
    result = t.judge(Expected(forward=(0,), forward_elements={0: 1 << 20}))
    assert FindingKind.FOREIGN_KERNELS in kinds(result)
    assert FindingKind.BOOKKEEPING not in kinds(result)


def test_a_reduction_over_real_sized_inputs_is_foreign_by_its_share_of_the_call():
    t = Trace()  # fills the GPU with few threads per element but takes half the call: the op's work, not a check
    _call(t, 0, 400_000, [(REDUCE, (528, 1, 1), (512, 1, 1), 400_000)])
    result = t.judge(Expected(forward=(0,), forward_elements={0: 8192 * 32_001}))
    assert FindingKind.FOREIGN_KERNELS in kinds(result)


def test_a_window_without_its_input_size_gets_only_the_floor():
    t = Trace()
    _call(t, 0, 2000, [(REDUCE, (64, 1, 1), (512, 1, 1))])  # 32,768 threads: over the floor of 16,384
    assert FindingKind.FOREIGN_KERNELS in kinds(t.judge(Expected(forward=(0,))))
