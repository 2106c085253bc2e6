"""The trace shim for real: compiled here against CUPTI's headers, preloaded into child Pythons, read by the
parent. Without a GPU the shim must say why it is inert (an authenticated ERROR record), keep producing MARK
and FLUSH records on a fallback clock, hide its channel from the process, never lose a record on a full pipe,
and every forgery the child attempts must be reported."""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import termios
import time
from dataclasses import replace
from pathlib import Path

import pytest

from evaluator.tracing import client
from evaluator.tracing.build import BuildError, BuiltShim, SearchPaths, build_shim, record_structs
from evaluator.tracing.frames import TamperKind
from evaluator.tracing.judge import Expected, FindingKind, judge, policy_for
from evaluator.tracing.reader import TraceChannel, TraceReader, TraceSnapshot
from evaluator.tracing.records import (
    ErrorRecord,
    ErrorStage,
    FlushRecord,
    MarkFlag,
    MarkRecord,
    StartFlag,
    StartRecord,
    encode_record,
)
from evaluator.tracing.tags import Edge, WindowKind, mark_tag

ROOT = Path(__file__).resolve().parents[2]
PYTHON = os.path.realpath(sys.executable)
TIMEOUT_S = 120


@pytest.fixture(scope="module")
def shim(tmp_path_factory) -> BuiltShim:
    built = build_shim(tmp_path_factory.mktemp("shim"))
    if isinstance(built, BuildError):
        if built.problem.startswith(("no C compiler", "CUPTI headers")):
            pytest.skip(f"cannot build the trace shim here: {built}")
        pytest.fail(str(built))
    return built


def _env(channel: TraceChannel | None, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", os.defpath), "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    if channel is not None:
        env.update(channel.child_env())
    env.update(extra or {})
    return env


PRELUDE = f"""
import json, os, sys
sys.path.insert(0, {str(ROOT)!r})
from evaluator.tracing import client, tags
TRACER = client.bind(os.environ.get("SHIM_PATH"))
def mark(kind, edge, index, stream=0):
    TRACER.mark(tags.mark_tag(getattr(tags.WindowKind, kind), getattr(tags.Edge, edge), index), stream)
def find_pipe(inode):
    for entry in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{{entry}}") == f"pipe:[{{inode}}]":
                return int(entry)
        except OSError:
            pass
"""


def run_child(shim: BuiltShim, body: str, *, argv: tuple[str, ...] = (), extra_env: dict[str, str] | None = None,
              expected_exe: str | None = PYTHON, launcher: tuple[str, ...] = (), stdin: bytes | None = None,
              before_reading=None) -> tuple[subprocess.CompletedProcess, TraceSnapshot, TraceChannel]:
    channel = TraceChannel.open(shim.library, shim.cupti_library, expected_exe)
    env = _env(channel, {"SHIM_PATH": str(shim.library), **(extra_env or {})})
    inode = str(os.fstat(channel.record_read).st_ino)
    proc = subprocess.Popen([*launcher, PYTHON, "-c", PRELUDE + body, inode, *argv], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            pass_fds=channel.child_fds())
    for fd in channel.child_fds():
        os.close(fd)
    if before_reading is not None:
        before_reading(channel)
    reader = TraceReader(channel.record_read, channel.key).start()
    out, err = proc.communicate(stdin, timeout=TIMEOUT_S)
    assert reader.wait_ended(TIMEOUT_S)
    snapshot = reader.snapshot()
    reader.close()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(), err.decode()), snapshot, channel


def _result(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- building ---

def test_build_is_cached_and_exports_only_the_harness_api(shim: BuiltShim, tmp_path: Path):
    again = build_shim(shim.library.parent)
    assert isinstance(again, BuiltShim) and again.reused and again.library == shim.library
    assert set(shim.structs) == {"KE_KERNEL_T", "KE_MEMCPY_T", "KE_MEMSET_T", "KE_P2P_T"}
    assert shim.cupti_library is not None and shim.cupti_library.name.startswith("libcupti.so")
    lib = ctypes.CDLL(str(shim.library))  # no KERNELEVO_TRACE_FD here: the constructor does nothing
    for name in ("ke_trace_mark", "ke_trace_flush", "ke_trace_status"):
        assert hasattr(lib, name)
    for hidden in ("emit", "g_key", "ke_siphash24", "start_cupti"):
        with pytest.raises(AttributeError):
            getattr(lib, hidden)


def test_record_structs_are_the_newest_the_headers_define(shim: BuiltShim):
    text = (shim.cupti_include / "cupti_activity.h").read_text()
    assert record_structs(text) == dict(shim.structs)
    synthetic = "} CUpti_ActivityKernel9;\n} CUpti_ActivityKernel12;\n} CUpti_ActivityMemset;\n"
    assert record_structs(synthetic) == {"KE_KERNEL_T": "CUpti_ActivityKernel12", "KE_MEMSET_T": "CUpti_ActivityMemset"}


def _search(tmp_path: Path, **changes) -> SearchPaths:
    base = SearchPaths(None, tmp_path / "no-cuda", (), None, os.environ.get("PATH", os.defpath), None)
    return replace(base, **changes)


def test_build_errors_say_what_to_install(tmp_path: Path):
    no_cc = build_shim(tmp_path / "cache", search=_search(tmp_path, path=str(tmp_path)))
    assert isinstance(no_cc, BuildError) and "no C compiler" in no_cc.problem and "apt-get install gcc" in no_cc.remedy
    no_cupti = build_shim(tmp_path / "cache", search=_search(tmp_path))
    assert isinstance(no_cupti, BuildError) and "pip install nvidia-cuda-cupti" in no_cupti.remedy

    fake = tmp_path / "fake-cuda"
    (fake / "include").mkdir(parents=True)
    (fake / "lib64").mkdir()
    (fake / "lib64" / "libcupti.so.13").write_bytes(b"")
    for header in ("cupti.h", "cupti_result.h", "cupti_version.h"):
        (fake / "include" / header).write_text("")
    (fake / "include" / "cupti_activity.h").write_text(
        "/* } CUpti_ActivityKernel10; } CUpti_ActivityMemcpy6; } CUpti_ActivityMemset4;\n"
        "   } CUpti_ActivityMemcpyPtoP4; */\n"
        "#error this header is broken\n")
    no_cuda_h = build_shim(tmp_path / "cache", search=_search(tmp_path, system_root=fake))
    assert isinstance(no_cuda_h, BuildError) and "cuda.h" in no_cuda_h.problem
    for header in ("cuda.h", "builtin_types.h"):
        (fake / "include" / header).write_text("")
    broken = build_shim(tmp_path / "cache", search=_search(tmp_path, system_root=fake))
    assert isinstance(broken, BuildError) and "this header is broken" in broken.problem
    assert not list((tmp_path / "cache").glob("*.so*"))  # nothing half-built left behind


# --- a traced child without a GPU ---

CPU_BODY = """
fds_before = sorted(int(x) for x in os.listdir("/proc/self/fd"))
for i in range(3):
    mark("FORWARD", "BEGIN", i)
    mark("FORWARD", "END", i)
seq = TRACER.flush()
fd = find_pipe(int(sys.argv[1]))
print(json.dumps({"loaded": TRACER.loaded, "status": TRACER.status(), "flush_seq": seq, "fd": fd,
                  "cloexec": bool(fd is not None and __import__("fcntl").fcntl(fd, 1) & 1),
                  "env": sorted(k for k in os.environ if k.startswith("KERNELEVO") or k == "LD_PRELOAD"),
                  "pid": os.getpid()}))
"""


def test_child_reports_why_it_is_inert_then_marks(shim: BuiltShim):
    done, snap, channel = run_child(shim, CPU_BODY)
    result = _result(done)
    assert snap.tampered is None and snap.ended
    starts = [r for r in snap.records if isinstance(r, StartRecord)]
    assert len(starts) == 1 and starts[0].pid == result["pid"] and starts[0].protocol == 1
    start = starts[0]
    assert start.flags & StartFlag.CUPTI_LOADED and start.cupti_runtime == start.cupti_compiled
    marks = [r for r in snap.records if isinstance(r, MarkRecord)]
    assert [m.tag for m in marks] == [mark_tag(WindowKind.FORWARD, e, i) for i in range(3) for e in Edge]
    flushes = [r for r in snap.records if isinstance(r, FlushRecord)]
    assert [f.seq for f in flushes] == [result["flush_seq"]] == [snap.last_seq]
    # the channel is hidden: variables gone, descriptor moved off the number the parent passed, close-on-exec
    assert result["loaded"] and result["env"] == []
    assert result["fd"] not in (channel.record_write, None) and result["cloexec"]
    assert start.flags & StartFlag.FD_MOVED
    if not start.flags & StartFlag.ACTIVE:  # no GPU here: an ERROR says why, marks use the fallback clock
        assert result["status"] is False
        errors = [r for r in snap.records if isinstance(r, ErrorRecord)]
        assert errors and errors[0].seq < start.seq
        assert errors[0].stage is ErrorStage.DRIVER and "no CUDA driver" in errors[0].text
        assert all(m.flags & MarkFlag.FALLBACK_CLOCK and m.flags & MarkFlag.STREAM_UNKNOWN for m in marks)
        policy, _ = policy_for("")
        verdict = judge(snap.records, policy, Expected(forward=(0, 1, 2)), require_active=False)
        assert {f.kind for f in verdict.findings} >= {FindingKind.TRACING_INACTIVE, FindingKind.NO_OWN_KERNEL}
        assert not any(f.kind is FindingKind.CLOCK for f in verdict.findings)  # no activity to misplace


def test_children_of_the_traced_process_inherit_nothing(shim: BuiltShim):
    body = """
import subprocess
probe = ("import os, json; fds = [os.readlink('/proc/self/fd/' + f) for f in os.listdir('/proc/self/fd') "
         "if os.path.exists('/proc/self/fd/' + f)]; "
         "print(json.dumps({'preload': os.environ.get('LD_PRELOAD'), 'fds': fds}))")
out = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout)
print(json.dumps({"preload": out["preload"], "has_record_pipe": f"pipe:[{sys.argv[1]}]" in out["fds"]}))
"""
    done, snap, _ = run_child(shim, body)
    grandchild = _result(done)
    assert grandchild == {"preload": None, "has_record_pipe": False}
    assert sum(isinstance(r, StartRecord) for r in snap.records) == 1


def test_a_launcher_leaves_the_channel_to_the_expected_program(shim: BuiltShim):
    env_tool = shutil.which("env")
    if env_tool is None:
        pytest.skip("no env(1)")
    done, snap, _ = run_child(shim, CPU_BODY, launcher=(env_tool,))
    result = _result(done)
    (start,) = [r for r in snap.records if isinstance(r, StartRecord)]
    assert start.pid == result["pid"]  # the Python behind env claimed it, not env
    done, snap, _ = run_child(shim, CPU_BODY, expected_exe="/bin/true")
    assert snap.records == () and snap.bytes_read == 0 and snap.ended
    assert "KERNELEVO_TRACE_FD" in _result(done)["env"]  # not claimed, left alone


def test_without_its_key_the_shim_writes_nothing(shim: BuiltShim):
    key_read, key_write = os.pipe()
    os.close(key_write)  # the parent failed to send the key
    record_read, record_write = os.pipe()
    env = _env(None, {"LD_PRELOAD": str(shim.library), "KERNELEVO_TRACE_FD": str(record_write),
                      "KERNELEVO_TRACE_KEY_FD": str(key_read)})
    proc = subprocess.run([PYTHON, "-c", "print('ran')"], env=env, pass_fds=(record_write, key_read),
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    os.close(record_write)
    os.close(key_read)
    reader = TraceReader(record_read, bytes(16)).start()
    assert reader.wait_ended(TIMEOUT_S)
    snap = reader.snapshot()
    reader.close()
    assert proc.stdout.strip() == "ran" and snap.bytes_read == 0
    verdict = judge(snap.records, policy_for("")[0], Expected(), require_active=True)
    assert FindingKind.NOT_TRACED in {f.kind for f in verdict.failures}


def test_an_unloadable_cupti_is_an_error_record(shim: BuiltShim, tmp_path: Path):
    done, snap, _ = run_child(shim, "TRACER.flush()", extra_env={"KERNELEVO_CUPTI_LIB": str(tmp_path / "nope.so")})
    assert done.returncode == 0, done.stderr
    (error,) = [r for r in snap.records if isinstance(r, ErrorRecord)]
    assert error.stage is ErrorStage.DLOPEN and "cannot load CUPTI" in error.text and "nope.so" in error.text
    (start,) = [r for r in snap.records if isinstance(r, StartRecord)]
    assert not start.flags & (StartFlag.CUPTI_LOADED | StartFlag.ACTIVE)


def test_a_cupti_of_another_release_is_refused(shim: BuiltShim):
    import triton

    other = Path(triton.__file__).parent / "backends" / "nvidia" / "lib" / "cupti" / "libcupti.so.12"
    if not other.is_file():
        pytest.skip("no second CUPTI release on this machine")
    done, snap, _ = run_child(shim, "TRACER.flush()", extra_env={"KERNELEVO_CUPTI_LIB": str(other)})
    assert done.returncode == 0, done.stderr
    (error,) = [r for r in snap.records if isinstance(r, ErrorRecord)]
    assert error.stage is ErrorStage.VERSION and "rebuild it with the headers" in error.text


def test_a_full_pipe_blocks_the_writer_and_loses_nothing(shim: BuiltShim):
    """Four threads write 24000 marks under a 1 ms interval timer (EINTR) while the parent does not read until
    the pipe is full."""
    body = """
import signal, threading
signal.signal(signal.SIGALRM, lambda *a: None)
signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
def work(t):
    for i in range(6000):
        TRACER.mark((t << 32) | i, 0)
threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
[th.start() for th in threads]
[th.join() for th in threads]
signal.setitimer(signal.ITIMER_REAL, 0, 0)
print(json.dumps({"flush_seq": TRACER.flush()}))
"""

    def wait_until_full(channel: TraceChannel) -> None:
        deadline = time.monotonic() + TIMEOUT_S
        capacity = fcntl.fcntl(channel.record_read, fcntl.F_GETPIPE_SZ)
        queued = ctypes.c_int(0)
        while time.monotonic() < deadline:
            fcntl.ioctl(channel.record_read, termios.FIONREAD, queued)
            if queued.value > capacity - 4096:  # no room for another frame: the writers are blocked now
                return
            time.sleep(0.01)
        pytest.fail("the child never filled the pipe")

    done, snap, _ = run_child(shim, body, before_reading=wait_until_full)
    assert snap.tampered is None
    marks = [r for r in snap.records if isinstance(r, MarkRecord)]
    assert len(marks) == 24000
    for t in range(4):
        assert [m.tag & 0xFFFFFFFF for m in marks if m.tag >> 32 == t] == list(range(6000))
    assert _result(done)["flush_seq"] == snap.last_seq


# --- forgery from inside the traced process ---

FORGE = """
import struct
fd = find_pipe(int(sys.argv[1]))
mark("FORWARD", "BEGIN", 0)
mode = sys.argv[2]
if mode == "garbage":
    os.write(fd, b"\\x00\\x01garbage" * 8)
elif mode == "replay":
    os.write(fd, bytes.fromhex(sys.stdin.readline()))
elif mode == "mac":
    body = struct.pack("<QB", TRACER.flush() + 1, 6) + struct.pack("<QQQIB", 1, 2, 0, 7, 0)
    os.write(fd, struct.pack("<I", len(body) + 8) + body + b"\\x00" * 8)
elif mode == "truncate":
    os.write(fd, struct.pack("<I", 40) + b"\\x00" * 10)
    os._exit(0)
elif mode == "close":
    mark("FORWARD", "END", 0)
    os.close(fd)
mark("FORWARD", "END", 0)
mark("FORWARD", "BEGIN", 1)
mark("FORWARD", "END", 1)
print(json.dumps({"fd": fd}))
"""


def _assert_tampered(snap: TraceSnapshot, kind: TamperKind) -> None:
    assert snap.tampered is not None and snap.tampered.kind is kind, snap.tampered
    verdict = judge(snap.records, policy_for("")[0], Expected(forward=(0, 1)), tampered=snap.tampered,
                    require_active=False)
    assert verdict.findings[0].kind is FindingKind.TAMPERED and verdict.failed


@pytest.mark.parametrize("mode, kind", [("garbage", TamperKind.BAD_LENGTH), ("mac", TamperKind.BAD_MAC),
                                        ("truncate", TamperKind.TRUNCATED)])
def test_forgery_from_the_child_is_reported(shim: BuiltShim, mode: str, kind: TamperKind):
    done, snap, _ = run_child(shim, FORGE, argv=(mode,))
    assert done.returncode == 0, done.stderr
    _assert_tampered(snap, kind)


def test_a_replayed_frame_is_reported(shim: BuiltShim):
    done, snap = _replay_run(shim)
    assert done.returncode == 0, done.stderr
    _assert_tampered(snap, TamperKind.REPLAYED)


def _replay_run(shim: BuiltShim) -> tuple[subprocess.CompletedProcess, TraceSnapshot]:
    """The parent hands the child one of the channel's own earlier frames; the child writes it back."""
    channel = TraceChannel.open(shim.library, shim.cupti_library, PYTHON)
    env = _env(channel, {"SHIM_PATH": str(shim.library)})
    proc = subprocess.Popen([PYTHON, "-c", PRELUDE + FORGE, str(os.fstat(channel.record_read).st_ino), "replay"],
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            pass_fds=channel.child_fds())
    reader = channel.start_reading()
    assert reader.wait_for_seq(1, TIMEOUT_S)
    first = reader.snapshot().records[0]
    out, err = proc.communicate((encode_record(channel.key, first).hex() + "\n").encode(), timeout=TIMEOUT_S)
    assert reader.wait_ended(TIMEOUT_S)
    snap = reader.snapshot()
    reader.close()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(), err.decode()), snap


def test_closing_the_channel_leaves_windows_missing(shim: BuiltShim):
    done, snap, _ = run_child(shim, FORGE, argv=("close",))
    assert done.returncode == 0, done.stderr
    assert snap.tampered is None  # the frames that arrived are authentic
    verdict = judge(snap.records, policy_for("")[0], Expected(forward=(0, 1)), require_active=False)
    missing = [f for f in verdict.failures if f.kind is FindingKind.MISSING_WINDOW]
    assert missing and "forward call 1" in missing[0].message


# --- the client outside a traced process ---

def test_binding_without_the_shim_is_inert(shim: BuiltShim):
    tracer = client.bind(str(shim.library) + ".missing")
    assert not tracer.loaded and "not loaded" in tracer.problem
    assert tracer.flush() == client.NO_CHANNEL and tracer.status() is False
    tracer.mark(1, 0)  # does nothing, raises nothing
    assert not client.bind(None).loaded  # the pytest process has no ke_trace_* symbols


def test_signals_do_not_disturb_the_parent_reader(shim: BuiltShim):
    """SIGCHLD and friends arrive in the parent while it reads; the reader keeps going."""
    previous = signal.signal(signal.SIGUSR1, lambda *a: None)
    try:
        def poke(channel: TraceChannel) -> None:
            os.kill(os.getpid(), signal.SIGUSR1)

        done, snap, _ = run_child(shim, CPU_BODY, before_reading=poke)
        assert _result(done)["loaded"] and snap.tampered is None
    finally:
        signal.signal(signal.SIGUSR1, previous)
