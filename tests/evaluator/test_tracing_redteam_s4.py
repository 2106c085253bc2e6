"""Red team on the verifier v2 relaxations, for what a CPU cannot run: synthetic GPU traces (built like
test_tracing_judge.py's) of candidates that have ATen do the op's work and count on the bookkeeping rule, and the
audit guard's allowance for the standard library's ``platform`` probes.

Grids and blocks below are what ATen launches on an H200 (132 SMs, 2048 threads per SM) for each op, read from
its launch heuristics (Reduce.cuh ``setReduceConfig``: 32x16 threads, 16 rows per block, a grid capped at
SMs x 4 blocks for a full reduction; SoftMax.cu: one block per row, up to 1024 threads, for rows too wide for the
warp and shared-memory softmaxes). Durations are HBM time at about 4.5 TB/s. The point of every attack is that
these kernels cover hundreds of input elements per thread, so a thread bound alone does not bound their work.
"""

from __future__ import annotations

import textwrap

from test_audit_guard import LIBRARY_DRIVER_HEAD, guard_report
from test_tracing_judge import FILL, HARNESS_STREAM, REDUCE, SPIN, Trace, kinds

from evaluator.tracing.judge import (
    BOOKKEEPING_LATENCY_NS,
    Expected,
    FindingKind,
    bookkeeping_allowance_ns,
    bookkeeping_threads,
)
from evaluator.tracing.tags import Edge, WindowKind

# at::native::(anonymous namespace in SoftMax.cu)::cunn_SoftMaxForward<4, float, float, float, Epilogue>
SOFTMAX_BLOCK = ("_ZN2at6native43_GLOBAL__N__b6de9c8c_10_SoftMax_cu_9f978f6319cunn_SoftMaxForwardILi4EfffNS1_"
                 "22SoftMaxForwardEpilogueEEEvPT2_PKT0_l")
WELFORD = "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_10WelfordOpsIfdiSt4pairIffEEEjfLi4ELi4EEEEEvT1_"
LEGACY_STREAM = 7 + 100  # the CUPTI id of another stream than the harness's


def _call(t: Trace, index: int, own: list[int], library: list[tuple[str, tuple, tuple, int]],
          kind: WindowKind = WindowKind.FORWARD, stream: int = HARNESS_STREAM) -> None:
    """One window: the candidate's kernels (durations, ns) then the library kernels (name, grid, block, ns)."""
    t.mark(kind, Edge.BEGIN, index)
    for ns in own:
        t.kernel("rms_kernel", duration=ns, grid=(8192, 1, 1), stream=stream)
    for name, grid, block, ns in library:
        t.kernel(name, grid=grid, block=block, duration=ns)
    t.mark(kind, Edge.END, index)


def _verdict(library: list, own: list[int], elements: int) -> set[FindingKind]:
    t = Trace()
    _call(t, 0, own, library)
    return kinds(t.judge(Expected(forward=(0,), forward_elements={0: elements})))


# ------------------------------------------------------------------ relaxation 2: bookkeeping by threads

def test_rmsnorm_stats_by_an_aten_row_reduction_are_not_bookkeeping():
    """s4 attack 2a. RMSNorm on 8192 x 4096 fp32: ``torch.linalg.vector_norm(x, dim=-1)`` is one reduce kernel of
    8192/16 blocks x 512 threads = 262,144 threads (8192 rows x 32), half of input/64 = 524,288; it reads the whole
    input (27 us), the candidate's kernel only scales (55 us): an 82 us call, under the 200 us from which the v2
    rule looked at time. The reduction is the op's work: foreign (v2 called it bookkeeping)."""
    elements = 8192 * 4096 + 4096
    norm = (REDUCE, (512, 1, 1), (32, 16, 1), 27_000)
    assert 8192 * 32 <= bookkeeping_threads(elements)  # the thread bound alone lets it through
    found = _verdict([norm], [55_000], elements)
    assert FindingKind.FOREIGN_KERNELS in found and FindingKind.BOOKKEEPING not in found


def test_layernorm_var_mean_in_aten_is_not_bookkeeping():
    """s4 attack 2a'. ``torch.var_mean(x, -1)``: one Welford reduce kernel, the same 32 threads per row."""
    elements = 4096 * 8192
    found = _verdict([(WELFORD, (256, 1, 1), (32, 16, 1), 28_000)], [56_000], elements)
    assert FindingKind.FOREIGN_KERNELS in found


def test_a_full_aten_reduction_over_a_large_input_is_not_bookkeeping():
    """s4 attack 2b. A sum/mean loss over 32M elements: ATen caps the grid at 132 x 4 blocks of 512 threads
    (270,336 threads, input/64 = 524,288) and reads everything in 30 us; the candidate's kernel is a token one."""
    found = _verdict([(REDUCE, (528, 1, 1), (512, 1, 1), 30_000)], [2_000], 1 << 25)
    assert FindingKind.FOREIGN_KERNELS in found


def test_an_aten_softmax_over_vocabulary_wide_rows_is_not_bookkeeping():
    """s4 attack 2c. softmax(x, -1) on 64 x 131072 (a vocabulary): one block of 1024 threads per row, 65,536
    threads against input/64 = 131,072; 16 us of kernel time in a 20 us call."""
    found = _verdict([(SOFTMAX_BLOCK, (64, 1, 1), (1024, 1, 1), 16_000)], [4_000], 64 * 131072)
    assert FindingKind.FOREIGN_KERNELS in found


def test_the_reduction_split_into_many_small_kernels_is_not_bookkeeping_either():
    """s4 attack 2d. The same row reduction in 16 slices of 512 rows (16,384 threads each): the threads add up
    the same, and so does the time; the launch-latency allowance is per call, not per kernel."""
    elements = 8192 * 4096
    slices = [(REDUCE, (32, 1, 1), (32, 16, 1), 2_500)] * 16
    found = _verdict(slices, [55_000], elements)
    assert FindingKind.FOREIGN_KERNELS in found


def test_a_small_case_within_the_floor_keeps_only_the_latency_allowance():
    """s4 attack 2e (the floor). An element-wise op on a 65,536-element small case done by one ATen kernel
    (16,384 threads: within the floor) is bookkeeping when it runs in launch latency: the floor admits what the
    CPU's 1/64 rule cannot see on tiny tensors. A kernel within the floor that runs longer than the latency
    allowance (a low-occupancy row reduction: 32 blocks over 512 x 16,384 elements) is not."""
    assert FindingKind.BOOKKEEPING in _verdict([(REDUCE, (128, 1, 1), (128, 1, 1), 3_000)], [2_000], 65536)
    found = _verdict([(REDUCE, (32, 1, 1), (32, 16, 1), BOOKKEEPING_LATENCY_NS + 8_000)], [30_000], 512 * 16384)
    assert FindingKind.FOREIGN_KERNELS in found


def test_padding_the_call_with_an_own_spin_buys_the_share_at_ten_times_the_cost():
    """s4 attack 2f (documented limit). An own kernel that spins 9x as long as the ATen softmax doing the whole op
    puts it at 10% of a >= 200 us call: bookkeeping by the share rule. The padding is on the harness's stream, so
    it is in the event-timed figure: the call is >= 10x slower than ATen alone, i.e. about 0.1x eager, which the
    speedup reports; such a candidate never wins a search (the verdict's claim that own kernels did the math is
    still wrong: the share rule trades that for honest kernels' final sums)."""
    softmax = (SOFTMAX_BLOCK, (64, 1, 1), (1024, 1, 1), 30_000)
    found = _verdict([softmax], [270_000], 64 * 131072)
    assert FindingKind.BOOKKEEPING in found and FindingKind.FOREIGN_KERNELS not in found
    assert bookkeeping_allowance_ns(300_000, 65536) == 30_000


def test_the_honest_glue_stays_bookkeeping():
    """What the relaxation was for (Liger's cross entropy: a mask, a count, bound checks, a final sum, nine kernels
    of one block on the targets) at a launch-bound small case and beside a long kernel."""
    glue = [(REDUCE, (1, 1, 1), (512, 1, 1), 3_000), (FILL.replace("FillFunctor", "CompareFunctor"), (1, 1, 1),
                                                      (128, 1, 1), 3_000)] * 4 + [(REDUCE, (1, 1, 1), (512, 1, 1),
                                                                                   3_000)]
    assert FindingKind.BOOKKEEPING in _verdict(glue, [2_000], 37_037)
    assert FindingKind.BOOKKEEPING in _verdict(glue, [900_000], 8192 * 32_001)


def test_bookkeeping_in_a_timed_trial_is_judged_by_the_same_rule():
    """Timed trials run without the op recorder except at secret positions: the trace is the only judge there."""
    t = Trace()
    t.kernel(SPIN, duration=200_000)
    _call(t, 0, [55_000], [(REDUCE, (512, 1, 1), (32, 16, 1), 27_000)], kind=WindowKind.TRIAL)
    result = t.judge(Expected(trials=(0,), trial_ms={0: 0.2}, trial_elements={0: 8192 * 4096}))
    assert FindingKind.FOREIGN_KERNELS in kinds(result)


# ------------------------------------------------------------------ relaxation 3: the empty graph

def test_legacy_default_stream_work_off_the_harness_stream_is_still_caught_by_the_trace():
    """s4 attack 3a. An empty CUDA graph no longer rejects; the trace must: a kernel on another stream than the
    one the harness marked (the legacy default stream while the harness times a side stream)."""
    t = Trace()
    t.mark(WindowKind.FORWARD, Edge.BEGIN, 0)
    t.kernel("rms_kernel", stream=LEGACY_STREAM)
    t.mark(WindowKind.FORWARD, Edge.END, 0)
    assert FindingKind.OFF_STREAM in kinds(t.judge(Expected(forward=(0,))))


def test_on_the_harness_stream_the_legacy_launch_is_fine():
    """The harness times on torch's current stream, which is the legacy default stream (handle 0, resolved by the
    shim through CU_STREAM_LEGACY): <<<grid, block>>> kernels land on the very stream the events bracket."""
    t = Trace()
    _call(t, 0, [4_000], [])
    assert not t.judge(Expected(forward=(0,))).failed


# ------------------------------------------------------------------ relaxation 1: platform's probes

_PROBE = LIBRARY_DRIVER_HEAD + textwrap.dedent("""
    guard.install()
    source = (
        "import functools, os, platform\\n"
        "def handed_platform():\\n"
        "    return library.call(functools.partial(platform.architecture, '/bin/sh'))\\n"
        "def handed_open():\\n"
        "    return library.call(functools.partial(os.open, PRIV + '/file', os.O_CREAT | os.O_WRONLY, 0o755))\\n"
        "def handed_path():\\n"
        "    return library.call(functools.partial(os.environ.__setitem__, 'PATH', PRIV + ':' + os.environ['PATH']))\\n"
        "def honest_after():\\n"
        "    return library.describe_host()\\n")
    namespace = {"library": library, "PRIV": str(private)}
    exec(compile(source, str(private / "candidate.py"), "exec"), namespace)
    before = library.describe_host()
    guard.active = True
    results = {}
    for name in ("handed_platform", "handed_open", "handed_path", "honest_after"):
        try:
            out = namespace[name]()
            results[name] = "allowed"
        except PermissionError:
            results[name] = "refused"
            continue
        if name == "handed_open":  # os.write raises no audit event: the candidate fills its program
            os.write(out, ("#!/bin/sh\\necho ran > " + str(private / "RAN") + "\\n").encode())
            os.close(out)
    guard.active = False
    print(json.dumps({"results": results, "ran": (private / "RAN").exists(), "violations": guard.violations}))
""")


def test_platform_probes_run_only_for_a_library_and_only_the_system_program(tmp_path):
    """s4 attack 1. The v2 allowance let ``file`` run whenever a platform.py frame came before the candidate's:
    (a) ``functools.partial(platform.architecture, path)`` handed to a library as a grid or hook ran ``file`` on
    the candidate's behalf; (b) with callables handed the same way the candidate wrote an executable ``file`` into
    its folder and put the folder first on PATH, and the library's own ``platform.architecture()`` (Triton's
    launcher build) then ran the candidate's program, outside every Python guard. Both are refused now; the
    library's own probe with the environment it started with stays allowed (test_audit_guard.py)."""
    private, lib = tmp_path / "private", tmp_path / "lib"
    private.mkdir()
    lib.mkdir()
    (private / "candidate.py").write_text("# the candidate's file\n")
    (lib / "library.py").write_text("import platform\n"
                                    "def describe_host():\n    return platform.architecture()\n"
                                    "def call(f):\n    return f()\n")
    report = guard_report(_PROBE, private, lib)
    assert not report["ran"], "the candidate's own `file` ran through platform.architecture()"
    # platform swallows the refusal (an OSError): the violations say which spawns were refused
    spawns = [v for v in report["violations"] if v.startswith("subprocess.Popen")]
    assert spawns and "candidate.py:3" in spawns[0], report  # the handed partial, not the library's probe
    # planting the program is stopped before any spawn: the PATH change is refused (session 5), or, if it got
    # through, the library's probe under the changed PATH is
    planted = any(v.startswith("os.putenv") for v in report["violations"])
    assert planted or len(spawns) == 2, report


_TOOLCHAIN_PROBE = LIBRARY_DRIVER_HEAD + textwrap.dedent("""
    guard.install()
    shell = "/bin/sh,-c,echo ran > " + str(private / "RAN")
    source = (
        "import functools, subprocess\\n"
        "def handed_wrapper():\\n"
        "    return library.call(functools.partial(subprocess.run, ['gcc', '-wrapper', SHELL, '-E', '-x', 'c',\\n"
        "                                                           '/dev/null'], capture_output=True))\\n"
        "def library_builds():\\n"
        "    return library.build(['gcc', '--version'])\\n")
    namespace = {"library": library, "SHELL": shell}
    exec(compile(source, str(private / "candidate.py"), "exec"), namespace)
    guard.active = True
    results = {}
    for name in ("handed_wrapper", "library_builds"):
        try:
            namespace[name]()
            results[name] = "allowed"
        except PermissionError:
            results[name] = "refused"
        except OSError:  # no gcc here: the hook allowed the spawn
            results[name] = "allowed"
    guard.active = False
    print(json.dumps({"results": results, "ran": (private / "RAN").exists()}))
""")


def test_the_toolchain_runs_for_a_library_not_for_a_callable_handed_to_it(tmp_path):
    """s4 attack 1' (before v2, same allowance). Any program named like the toolchain (``gcc``, ``cc``, ``ld*``)
    ran whenever a library frame came before the candidate's: ``partial(subprocess.run, ["gcc", "-wrapper",
    "/bin/sh,-c,CMD", ...])`` handed to a library as a grid or a hook ran any shell command. Now the library's own
    code must call subprocess by name (Triton's ``check_call([cc, ...])``)."""
    private, lib = tmp_path / "private", tmp_path / "lib"
    private.mkdir()
    lib.mkdir()
    (private / "candidate.py").write_text("# the candidate's file\n")
    (lib / "library.py").write_text("import subprocess\n"
                                    "def call(f):\n    return f()\n"
                                    "def build(argv):\n"
                                    "    return subprocess.check_call(argv, stdout=subprocess.DEVNULL)\n")
    report = guard_report(_TOOLCHAIN_PROBE, private, lib)
    assert report == {"results": {"handed_wrapper": "refused", "library_builds": "allowed"}, "ran": False}
