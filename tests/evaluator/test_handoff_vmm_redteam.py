"""Red team on the output hand-off: a candidate process that rewrote its harness (it knows the nonce, writes any
bytes on its reply pipe and sends any descriptor it can open on its request socket, whenever it likes) attacks
the parent and the reference. Real processes, real sockets, pipes and descriptors; what needs a GPU is left to
tests/evaluator/test_handoff_vmm.py's GPU tests.

Tests marked ``xfail(strict=True)`` are attacks that still work: each names the change that stops it (in a
module this file's author does not own); once the change is made the test passes and the mark must go.
"""

from __future__ import annotations

import fcntl
import os
import resource
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
import torch

from evaluator import processes
from evaluator.calls import sent_for
from evaluator.sandboxed import handoff
from evaluator.session import attach_handoff_fds
from kernelevo import sandbox
from tests.support import descriptors

GRANULE = 1 << 21

# The hostile harness: argv[1] the reply pipe, argv[2] the nonce, argv[3] the attack (Python, run with the helpers
# below in scope), argv[4] the log of what it sent (the test's, for its leak checks). After the attack it waits until
# the parent closes the socket, so that it never dies first.
HOSTILE = descriptors.LOG_IDENTITIES + textwrap.dedent("""
    import json, os, socket, sys, tempfile, time
    out, nonce = os.fdopen(int(sys.argv[1]), "wb", buffering=0), sys.argv[2]
    channel = socket.socket(fileno=0)
    def reply(**payload):
        out.write((json.dumps({**payload, "nonce": nonce}) + "\\n").encode())
    def raw(data):
        out.write(data)
    def send_fds(fds, data=b"\\0"):
        log_identities(sys.argv[4], fds)
        return socket.send_fds(channel, [data], fds)
    def files(n):
        kept = [tempfile.TemporaryFile() for _ in range(n)]
        globals().setdefault("_kept", []).append(kept)
        return [f.fileno() for f in kept]
    exec(sys.argv[3])
    try:
        channel.recv(1)
    except OSError:
        pass
""")


def _worker(tmp_path: Path, attack: str) -> processes.Worker:
    parent_end, child_end = socket.socketpair()
    read_fd, write_fd = os.pipe()
    nonce = "n" * 32
    descriptors.log_identities(_log(tmp_path), (parent_end.fileno(), read_fd))
    proc = subprocess.Popen([sys.executable, "-c", HOSTILE, str(write_fd), nonce, textwrap.dedent(attack),
                             str(_log(tmp_path))],
                            stdin=child_end.fileno(), pass_fds=(write_fd,), start_new_session=True)
    child_end.close()
    os.close(write_fd)
    private = tmp_path / "w1"
    (private / "outbox").mkdir(parents=True, exist_ok=True)
    return processes.Worker(process=sandbox.Sandboxed(proc, sandbox.current()), role="candidate",
                            requests=parent_end, result_fd=read_fd, log_path=tmp_path / "w1.log", private=private,
                            nonce=nonce, memory_mb=4096)


def _log(tmp_path: Path) -> Path:
    return tmp_path / "theirs.log"


def _theirs(tmp_path: Path, before: dict[int, descriptors.Identity]) -> list[int]:
    """The parent's descriptors on the worker's objects (its two channels, anything it sent), opened since
    ``before``: the worker's channels while it lives, what its last reply declared, and after a kill nothing."""
    return descriptors.held_since(before, descriptors.logged(_log(tmp_path)))


def _channels(worker: processes.Worker) -> list[int]:
    return [worker.requests.fileno(), worker.result_fd]


def _forged(tmp_path: Path, attack: str) -> str:
    """What the parent said when it killed a worker running ``attack`` (it must, and leak no descriptor)."""
    before = descriptors.snapshot()
    worker = _worker(tmp_path, attack)
    try:
        with pytest.raises(processes.WorkerForgery) as caught:
            worker.receive(120)
        assert worker.process.poll() is not None and worker.reply_fds() == []
    finally:
        worker.kill()
    assert _theirs(tmp_path, before) == []
    return str(caught.value)


# -- the parent: declarations ----------------------------------------------------------------------------------
@pytest.mark.parametrize("nfds", ["-1", "1.5", '"2"', "true", "null", "[]", "{}", "1e400", "NaN", "65", "10" * 40])
def test_a_declaration_that_is_no_count_of_one_message_kills_the_worker(tmp_path, nfds):
    message = _forged(tmp_path, f"""
        send_fds(files(2))
        raw(b'{{"nonce": "%s", "nfds": {nfds}}}\\n' % nonce.encode())
    """)
    assert "forged file descriptors" in message and "declared" in message


@pytest.mark.parametrize("nfds", ["0", "0.0", "false"])
def test_descriptors_no_reply_declares_never_enter_the_parents_table(tmp_path, nfds):
    """A reply declaring none leaves what was sent in the socket: it is the kernel's until the socket closes."""
    before = descriptors.snapshot()
    worker = _worker(tmp_path, f"""
        send_fds(files(3))
        raw(b'{{"nonce": "%s", "ok": true, "nfds": {nfds}}}\\n' % nonce.encode())
    """)
    try:
        assert worker.receive(120)["ok"] is True
        assert worker.reply_fds() == [] and _theirs(tmp_path, before) == sorted(_channels(worker))  # nothing else
    finally:
        worker.kill()
    assert _theirs(tmp_path, before) == []


def test_a_flood_of_undeclared_descriptors_costs_the_parent_none(tmp_path):
    """Hundreds of messages of 64 descriptors each, then an honest reply: in flight, they are the kernel's (bounded
    by the sender's own descriptor limit and the socket's buffer); the parent's table does not grow."""
    before = descriptors.snapshot()
    worker = _worker(tmp_path, """
        fds, sent = files(64), 0
        channel.setblocking(False)  # socket.send_fds drops its flags before Python 3.12
        while sent < 2000:
            try:
                send_fds(fds)
            except OSError:  # the buffer is full, or the sender's own in-flight limit is reached
                break
            sent += 1
        channel.setblocking(True)
        reply(ok=True, sent=sent)
    """)
    try:
        reply = worker.receive(120)
        assert reply["sent"] > 10 and _theirs(tmp_path, before) == sorted(_channels(worker))
    finally:
        worker.kill()
    assert _theirs(tmp_path, before) == []


def test_undeclared_descriptors_queued_before_a_declaring_reply_are_read_in_its_place_and_no_more(tmp_path):
    """The parent reads one message per declaring reply, the first in the queue: which descriptors a reply gets is
    the sending process's choice either way (only it writes there), and never more than declared."""
    before = descriptors.snapshot()
    worker = _worker(tmp_path, """
        send_fds(files(2))  # declared by nothing
        send_fds(files(2))
        reply(ok=True, nfds=2)
    """)
    try:
        worker.receive(120)
        assert len(worker.reply_fds()) == 2
        assert _theirs(tmp_path, before) == sorted(_channels(worker) + worker.reply_fds())
    finally:
        worker.kill()
    assert _theirs(tmp_path, before) == []


@pytest.mark.parametrize("attack,why", [
    ("send_fds(files(2)); send_fds(files(1)); reply(ok=True, nfds=3)", "2 arrived"),  # one sendmsg split in two
    ("send_fds(files(253)); reply(ok=True, nfds=64)", "more than 64 arrived"),  # SCM_MAX_FD in one message
    ("reply(ok=True, nfds=1); channel.shutdown(socket.SHUT_WR)", "closed its channel"),
    ("channel.sendall(b'\\0\\0'); reply(ok=True, nfds=1)", "0 arrived"),
])
def test_descriptors_that_arrive_otherwise_than_declared_kill_the_worker(tmp_path, attack, why):
    assert why in _forged(tmp_path, attack)


def test_descriptors_sent_after_their_reply_are_still_read_and_bounded_in_count(tmp_path):
    before = descriptors.snapshot()
    worker = _worker(tmp_path, """
        reply(ok=True, nfds=64)
        time.sleep(0.2)
        send_fds(files(64))
    """)
    try:
        worker.receive(120)
        fds = worker.reply_fds()
        assert len(fds) == 64 and _theirs(tmp_path, before) == sorted(_channels(worker) + fds)
    finally:
        worker.kill()
    assert _theirs(tmp_path, before) == []


OPENERS = {
    "proc_self": ("os.open('/proc/self', os.O_RDONLY)", "a directory"),
    "pipe_to_itself": ("os.pipe()[0]", "a FIFO"),
    "socket_to_itself": ("socket.socketpair()[0].detach()", "a socket"),
    "dev_null": ("os.open('/dev/null', os.O_RDONLY)", "another character device"),
    "dev_zero": ("os.open('/dev/zero', os.O_RDONLY)", "another character device"),
    "its_request_socket": ("0", "a socket"),
    "its_reply_pipe": ("int(sys.argv[1])", "a FIFO"),
}


@pytest.mark.parametrize("name", sorted(OPENERS))
def test_descriptors_that_reach_past_the_sandbox_are_refused(tmp_path, name):
    opener, why = OPENERS[name]
    message = _forged(tmp_path, f"fd = {opener}; send_fds([fd]); reply(ok=True, nfds=1)")
    assert why in message


# Kinds the parent cannot tell from an allocation's export (other drivers export anonymous inodes and regular
# files): it takes them; the reference's driver import refuses them (GPU, see the report), and so far that
# refusal is read as "the VMM hand-off does not work here" (the session falls back to files).
ACCEPTED = {
    "eventfd": "os.eventfd(0)",
    "memfd": "os.memfd_create('x')",
    "proc_self_mem": "os.open('/proc/self/mem', os.O_RDONLY)",
    "its_own_regular_file": "files(1)[0]",
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_descriptors_the_parent_cannot_tell_from_an_export_are_taken_close_on_exec(tmp_path, name):
    before = descriptors.snapshot()
    worker = _worker(tmp_path, f"fd = {ACCEPTED[name]}; send_fds([fd]); reply(ok=True, nfds=1)")
    try:
        worker.receive(120)
        (fd,) = worker.reply_fds()
        assert fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC  # never inherited by a process the parent runs
        assert processes.refused_descriptor(os.fstat(fd).st_mode, os.fstat(fd).st_rdev) is None
    finally:
        worker.kill()
    assert _theirs(tmp_path, before) == []


# -- the parent: the reply pipe --------------------------------------------------------------------------------
def test_a_reply_nested_past_the_decoders_stack_is_a_forgery_not_a_crash(tmp_path):
    message = _forged(tmp_path, "raw(b'[' * 200000 + b'\\n')")
    assert "nonce" in message


def test_a_reply_without_end_is_cut_off_instead_of_filling_the_parents_memory(tmp_path, monkeypatch):
    monkeypatch.setattr(processes, "MAX_REPLY_BYTES", 4 << 20)
    message = _forged(tmp_path, """
        block = b'{"nonce": "' + nonce.encode() + b'", "pad": "' + b"x" * (1 << 20)
        for _ in range(64):
            raw(block)
    """)
    assert "without a line end" in message


def test_replies_split_over_writes_or_sharing_one_are_read_as_written(tmp_path):
    worker = _worker(tmp_path, """
        line = json.dumps({"k": 1, "nonce": nonce}).encode()
        raw(line[:5]); time.sleep(0.05); raw(line[5:] + b"\\n" + json.dumps({"k": 2, "nonce": nonce}).encode())
        raw(b"\\n")
    """)
    try:
        assert worker.receive(120)["k"] == 1 and worker.receive(120)["k"] == 2
    finally:
        worker.kill()


def test_channels_numbered_past_1024_are_still_read(tmp_path):
    """A busy parent (pre-started workers, trace channels, each reply's 64 descriptors) passes descriptor 1024,
    where select() raises; the parent's reads must not depend on it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1400:
        pytest.skip(f"the descriptor limit ({hard}) is too low to pass 1024 here")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1400), hard))
    padding = []
    try:
        while len(padding) < 1100:
            padding.append(os.open("/dev/null", os.O_RDONLY))
        worker = _worker(tmp_path, "send_fds(files(2)); reply(ok=True, nfds=2)")
        try:
            assert worker.requests.fileno() > 1024 and worker.result_fd > 1024
            assert worker.receive(120)["ok"] is True and len(worker.reply_fds()) == 2
        finally:
            worker.kill()
    finally:
        for fd in padding:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


# -- the reference: descriptors --------------------------------------------------------------------------------
def _descriptor(**change) -> dict:
    good = {"fd": 0, "device": 0, "size_bytes": GRANULE, "dtype": "float32", "shape": [4, 4], "stride": [4, 1],
            "storage_offset": 0, "fingerprint": 1}
    return {**good, **change}


@pytest.mark.parametrize("shape,stride", [([1 << 40], [0]), ([1 << 20, 1 << 20], [0, 0]), ([1024, 1024], [1, 1]),
                                          ([1 << 70], [0])])
def test_a_view_that_reads_more_than_its_allocation_is_refused(shape, stride):
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.validate_vmm([_descriptor(shape=shape, stride=stride)], 1, GRANULE, GRANULE * 32)
    assert caught.value.kind == "invalid"


def test_what_such_a_view_would_have_cost_the_reference():
    """Why the layout is checked, not only the last byte: 4 bytes of allocation would have been cloned as 64 GiB."""
    view = torch.zeros(1).as_strided([1 << 34], [0])
    assert view.numel() * view.element_size() == 64 << 30
    assert handoff.contiguous_strides([2, 3, 4]) == [12, 4, 1] and handoff.contiguous_strides([]) == []


def _hostile_reply_worker(tmp_path: Path) -> processes.Worker:
    worker = _worker(tmp_path, "send_fds(files(1)); reply(ok=True, nfds=1)")
    worker.receive(120)
    return worker


def test_two_outputs_on_one_allocation_are_refused(tmp_path):
    worker = _hostile_reply_worker(tmp_path)
    try:
        sent = {"o-1": {"vmm": [_descriptor(fd=0), _descriptor(fd=0)], "kept": 0}}
        numbered, fds = attach_handoff_fds({"op": "compare", "outputs": [{"name": "o-1",
                                                                          "sent": sent_for(sent, "o-1", worker)}]})
        with pytest.raises(handoff.HandoffError):
            handoff.validate_vmm(numbered["outputs"][0]["sent"]["vmm"], len(fds), GRANULE, GRANULE * 32)
    finally:
        worker.kill()


# -- the reference: the file hand-off (CPU, and any candidate's fallback: one refused import is enough) ----------
def _outbox(tmp_path: Path) -> Path:
    outbox = tmp_path / "procs" / "w1" / "outbox"
    outbox.mkdir(parents=True)
    return outbox


def test_a_link_at_the_outputs_path_is_not_followed(tmp_path):
    theirs = tmp_path / "inputs" / "init.pt"
    theirs.parent.mkdir()
    torch.save([torch.arange(4.0)], theirs)
    path = _outbox(tmp_path) / "o-1.pt"
    path.symlink_to(theirs)
    with pytest.raises(handoff.HandoffError):
        handoff.receive({"file": str(path)}, "cpu", None)


def test_a_link_in_place_of_the_outbox_is_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    torch.save([torch.arange(4.0)], elsewhere / "o-1.pt")
    outbox = _outbox(tmp_path)
    outbox.rmdir()
    outbox.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(handoff.HandoffError):
        handoff.receive({"file": str(outbox / "o-1.pt")}, "cpu", None)


def test_a_fifo_at_the_outputs_path_does_not_block_the_reference(tmp_path):
    path = _outbox(tmp_path) / "o-1.pt"
    os.mkfifo(path)
    outcome: list[BaseException | object] = []

    def judge() -> None:
        try:
            outcome.append(handoff.receive({"file": str(path)}, "cpu", None))
        except BaseException as exc:  # noqa: BLE001 - recorded for the assertion
            outcome.append(exc)

    thread = threading.Thread(target=judge, daemon=True)
    thread.start()
    thread.join(timeout=30)  # a refusal takes milliseconds; this only bounds the test
    blocked = thread.is_alive()
    if blocked:  # release the reader: a writer that closes at once
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(timeout=30)
    assert not blocked
    assert isinstance(outcome[0], handoff.HandoffError)


def test_the_file_hand_off_loads_no_code(tmp_path):
    """weights_only: a pickle that would run code on load is refused, not run."""
    class Boom:
        def __reduce__(self):
            return (os.system, ("touch " + str(tmp_path / "ran"),))

    path = _outbox(tmp_path) / "o-1.pt"
    torch.save([Boom()], path)
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.receive({"file": str(path)}, "cpu", None)
    assert caught.value.kind == "invalid" and not (tmp_path / "ran").exists()



# -- on a GPU (not run where this was written: see the module docstring) ----------------------------------------
KEY = 0x2F3A_1B4C_5D6E_7F80


def _exported(tmp_path: Path, out: torch.Tensor) -> tuple[handoff.Outbox, dict, int]:
    outbox = handoff.Outbox(KEY, "vmm")
    sent = outbox.send([out], tmp_path / "unused.pt", "call 1")
    assert "vmm" in sent, outbox.export_failed
    (fd,) = outbox.take_fds()
    return outbox, sent, fd


@pytest.mark.gpu
def test_a_real_export_is_a_descriptor_the_parent_takes_and_says_which_kind(tmp_path):
    """Which kind the driver's export is decides whether the parent could refuse regular files and anonymous
    inodes outright (see refused_descriptor)."""
    outbox, _sent, fd = _exported(tmp_path, torch.randn(1000, device="cuda"))
    try:
        info = os.fstat(fd)
        print(f"export: mode {info.st_mode:#o} rdev {os.major(info.st_rdev)}:{os.minor(info.st_rdev)}")
        assert processes.refused_descriptor(info.st_mode, info.st_rdev) is None
    finally:
        os.close(fd)
        outbox.release_exports()


HOSTILE_FDS = {
    "regular_file": lambda tmp: os.open(tmp / "forged", os.O_RDWR | os.O_CREAT),
    "eventfd": lambda tmp: os.eventfd(0),
    "memfd": lambda tmp: os.memfd_create("forged"),
    "proc_self_mem": lambda tmp: os.open("/proc/self/mem", os.O_RDONLY),
    "nvidiactl": lambda tmp: os.open("/dev/nvidiactl", os.O_RDWR),
}


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(HOSTILE_FDS))
def test_a_descriptor_that_is_no_export_is_refused_by_the_driver_and_leaves_the_context_usable(tmp_path, name):
    outbox, sent, real = _exported(tmp_path, torch.randn(1000, device="cuda"))
    forged = HOSTILE_FDS[name](tmp_path)
    try:
        if name in ("regular_file", "memfd"):
            os.ftruncate(forged, sent["vmm"][0]["size_bytes"])
        with pytest.raises(handoff.HandoffError) as caught:
            handoff.receive(sent, "cuda", KEY, [forged])
        assert caught.value.kind == "unavailable"  # today this reads as "VMM does not work here" (see the report)
        assert torch.ones(4, device="cuda").sum().item() == 4.0  # no sticky error in this process's context
        (received,) = handoff.receive(sent, "cuda", KEY, [real])  # and the real one still maps
        assert received.shape == (1000,)
    finally:
        os.close(forged)
        os.close(real)
        outbox.release_exports()


@pytest.mark.gpu
def test_a_descriptor_claiming_more_than_its_allocation_maps_nothing(tmp_path):
    outbox, sent, fd = _exported(tmp_path, torch.randn(1000, device="cuda"))
    try:
        d = sent["vmm"][0]
        bigger = {**sent, "vmm": [{**d, "size_bytes": d["size_bytes"] * 8, "shape": [d["size_bytes"] * 2],
                                   "stride": [1]}]}
        with pytest.raises(handoff.HandoffError) as caught:
            handoff.receive(bigger, "cuda", KEY, [fd])
        # The candidate's lie, not the machine's failure; today "unavailable" (the session falls back to files).
        assert caught.value.kind in ("unavailable", "invalid")
        assert torch.ones(4, device="cuda").sum().item() == 4.0
    finally:
        os.close(fd)
        outbox.release_exports()


@pytest.mark.gpu
def test_writes_racing_the_references_copy_never_get_unfingerprinted_bytes_compared(tmp_path):
    """The candidate process keeps its read-write mapping: a stream rewriting it while the reference copies. What
    the reference returns (if anything) is exactly what the fingerprint in the descriptor covers."""
    out = torch.randn(1 << 22, device="cuda")
    outbox, sent, fd = _exported(tmp_path, out)
    (export,) = outbox._exports
    live = export.view(torch.float32, [1 << 22])
    stop = threading.Event()

    def scribble() -> None:
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            while not stop.is_set():
                live.add_(1.0)
        stream.synchronize()

    writer = threading.Thread(target=scribble, daemon=True)
    writer.start()
    try:
        outcomes = []
        for _ in range(20):
            try:
                (received,) = handoff.receive(sent, "cuda", KEY, [fd])
            except handoff.HandoffError as exc:
                outcomes.append(exc.kind)
            else:
                assert handoff.fingerprint(received, KEY) == sent["vmm"][0]["fingerprint"]
                outcomes.append("same")
        assert set(outcomes) <= {"tampered", "same"} and "tampered" in outcomes
    finally:
        stop.set()
        writer.join(timeout=60)
        os.close(fd)
        outbox.release_exports()


# -- the parent's requests -------------------------------------------------------------------------------------
READER = textwrap.dedent("""
    import os, socket, sys, time
    from evaluator.sandboxed.entry import _requests
    request, fds = next(_requests(socket.socket(fileno=0)))
    print(len(request["pad"]), len(fds), flush=True)
""")


def test_a_large_request_with_descriptors_arrives_whole_when_signals_interrupt_its_send(tmp_path):
    """A compare request echoes what the candidate sent (its descriptors' JSON, up to a reply's size), so it can be
    large; a signal landing during the sendmsg that carries descriptors makes it return early, the rest must
    follow."""
    import signal

    parent_end, child_end = socket.socketpair()
    child = subprocess.Popen([sys.executable, "-c", READER], cwd=Path(__file__).resolve().parents[2],
                             stdin=child_end.fileno(), stdout=subprocess.PIPE)
    child_end.close()
    worker = processes.Worker(process=sandbox.Sandboxed(child, sandbox.current()), role="reference",
                              requests=parent_end, result_fd=os.open("/dev/null", os.O_RDONLY),
                              log_path=tmp_path / "r.log", private=tmp_path / "r", nonce="n", memory_mb=4096)
    previous = signal.signal(signal.SIGALRM, lambda *_: None)
    signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
    carried = os.open("/dev/null", os.O_RDONLY)
    try:
        worker.send({"op": "compare", "pad": "x" * (64 << 20)}, [carried])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, previous)
        os.close(carried)
    try:
        out, _ = child.communicate(timeout=120)
        assert out.split() == [str(64 << 20).encode(), b"1"]
    finally:
        worker.kill()
