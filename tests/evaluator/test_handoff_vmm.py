"""Outputs as CUDA VMM allocations: file descriptors from a candidate process to the parent (declared, bounded,
checked), numbered into the reference's request, descriptors validated; on a GPU, two sandboxes end to end."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evaluator import processes
from evaluator.run_candidate import sent_for
from evaluator.sandboxed import handoff, wire
from evaluator.session import attach_handoff_fds
from kernelevo import sandbox
from tests.support import descriptors

ROOT = Path(__file__).resolve().parents[2]
KEY = 0x2F3A_1B4C_5D6E_7F80


def test_both_sides_bound_a_message_by_the_same_number_of_descriptors():
    assert processes.MAX_FDS_PER_MESSAGE == wire.MAX_FDS_PER_MESSAGE


def _mode(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_mode, info.st_rdev


def test_only_descriptors_an_allocation_can_have_are_accepted(tmp_path: Path):
    regular = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT)
    anonymous = os.eventfd(0)
    directory = os.open(tmp_path, os.O_RDONLY)
    null = os.open("/dev/null", os.O_RDONLY)
    read_end, write_end = os.pipe()
    a, b = socket.socketpair()
    try:
        assert processes.refused_descriptor(*_mode(regular)) is None
        assert processes.refused_descriptor(*_mode(anonymous)) is None
        assert processes.refused_descriptor(stat.S_IFCHR | 0o666, os.makedev(195, 255)) is None  # /dev/nvidiactl
        assert processes.refused_descriptor(*_mode(directory)) == "a directory"
        assert processes.refused_descriptor(*_mode(a.fileno())) == "a socket"
        assert processes.refused_descriptor(*_mode(read_end)) == "a FIFO"
        assert processes.refused_descriptor(*_mode(null)) == "another character device"
    finally:
        for fd in (regular, anonymous, directory, null, read_end, write_end):
            os.close(fd)
        a.close()
        b.close()


# A process that sends descriptors on its fd 0 (the request socket of a worker) as a hostile harness might;
# argv[2] logs what it sent for the test's leak check.
SENDER = descriptors.LOG_IDENTITIES + textwrap.dedent("""
    import os, socket, sys, tempfile
    mode = sys.argv[1]
    channel = socket.socket(fileno=0)
    send_fds = socket.send_fds
    def logged_send(sock, data, fds):
        log_identities(sys.argv[2], fds)
        return send_fds(sock, data, fds)
    socket.send_fds = logged_send
    files = [tempfile.TemporaryFile() for _ in range(3)]
    fds = [f.fileno() for f in files]
    if mode == "two":
        socket.send_fds(channel, [b"\\0"], fds[:2])
    elif mode == "three":
        socket.send_fds(channel, [b"\\0"], fds)
    elif mode == "one":
        socket.send_fds(channel, [b"\\0"], fds[:1])
    elif mode == "byte":
        channel.sendall(b"\\0")
    elif mode == "socket":
        pair = socket.socketpair()
        socket.send_fds(channel, [b"\\0"], [fds[0], pair[0].fileno()])
    elif mode == "directory":
        socket.send_fds(channel, [b"\\0"], [fds[0], os.open("/", os.O_RDONLY)])
    elif mode == "closed":
        channel.close()
    print("sent", flush=True)
    sys.stdin.buffer.read(1) if mode != "closed" else None
""")


def _sent_by(mode: str, log: Path) -> tuple[socket.socket, subprocess.Popen]:
    parent_end, child_end = socket.socketpair()
    child = subprocess.Popen([sys.executable, "-c", SENDER, mode, str(log)], stdin=child_end.fileno(),
                             stdout=subprocess.PIPE)
    child_end.close()
    assert child.stdout is not None and child.stdout.readline() == b"sent\n"
    return parent_end, child


def test_declared_descriptors_are_read_and_checked(tmp_path: Path):
    channel, child = _sent_by("two", tmp_path / "sent.log")
    try:
        fds = processes.receive_declared_fds(channel, 2)
        assert len(fds) == 2 and all(stat.S_ISREG(os.fstat(fd).st_mode) for fd in fds)
        for fd in fds:
            os.close(fd)
    finally:
        channel.close()
        child.kill()
        child.wait()


@pytest.mark.parametrize("mode,declared,why", [
    ("three", 2, "more than 2 arrived"),  # more than declared: the kernel closes the excess, the message is truncated
    ("one", 2, "1 arrived"),
    ("byte", 1, "0 arrived"),  # data without descriptors
    ("socket", 2, "is a socket"),
    ("directory", 2, "is a directory"),
    ("closed", 1, "closed its channel"),
    ("nothing", 1, "none arrived"),  # a declaration with nothing sent: refused after the bound, never a hang
    ("two", 0, "declared 0"),
    ("two", wire.MAX_FDS_PER_MESSAGE + 1, "declared 65"),
    ("two", "2", "declared '2'"),
])
def test_descriptors_that_do_not_arrive_as_declared_are_refused_and_closed(tmp_path, mode, declared, why):
    log = tmp_path / "sent.log"
    before = descriptors.snapshot()
    channel, child = _sent_by(mode, log)
    try:
        with pytest.raises(processes.FdProtocolError) as caught:
            processes.receive_declared_fds(channel, declared, timeout_s=0.5)
        assert why in str(caught.value)
        assert descriptors.held_since(before, descriptors.logged(log)) == []  # whatever arrived was closed again
    finally:
        channel.close()
        child.kill()
        child.wait()


# A worker process (fd 0: the request socket; argv: the reply pipe and the nonce) whose replies declare
# descriptors, truthfully or not, and that sends one descriptor no reply declares.
WORKER = textwrap.dedent("""
    import json, os, socket, sys, tempfile
    out, nonce = os.fdopen(int(sys.argv[1]), "wb", buffering=0), sys.argv[2]
    channel = socket.socket(fileno=0)
    files = [tempfile.TemporaryFile() for _ in range(4)]
    def reply(**payload):
        out.write((json.dumps({**payload, "nonce": nonce}) + "\\n").encode())
    def wait():
        channel.recv(1)
    socket.send_fds(channel, [b"\\0"], [files[0].fileno(), files[1].fileno()])
    reply(ok=True, nfds=2)
    wait()
    reply(ok=True)  # no descriptors: those of the last reply are closed by the parent
    wait()
    socket.send_fds(channel, [b"\\0"], [files[2].fileno()])  # declared by nothing
    reply(ok=True, nfds=2)  # declares two, only the undeclared one is there
    wait()
""")


def _worker(tmp_path: Path) -> processes.Worker:
    parent_end, child_end = socket.socketpair()
    read_fd, write_fd = os.pipe()
    nonce = "n" * 32
    proc = subprocess.Popen([sys.executable, "-c", WORKER, str(write_fd), nonce], stdin=child_end.fileno(),
                            pass_fds=(write_fd,), start_new_session=True)
    child_end.close()
    os.close(write_fd)
    private = tmp_path / "w1"
    (private / "outbox").mkdir(parents=True)
    return processes.Worker(process=sandbox.Sandboxed(proc, sandbox.current()), role="candidate",
                            requests=parent_end, result_fd=read_fd, log_path=tmp_path / "w1.log", private=private,
                            nonce=nonce, memory_mb=512)


def test_a_worker_keeps_declared_descriptors_until_its_next_reply_and_kills_a_process_that_forges_them(tmp_path):
    worker = _worker(tmp_path)
    try:
        reply = worker.receive(60)
        assert "nfds" not in reply
        first = worker.reply_fds()
        assert len(first) == 2 and all(stat.S_ISREG(os.fstat(fd).st_mode) for fd in first)
        sent = {"o-1": {"vmm": [{"fd": 1}, {"fd": 0}, {"fd": 2}, {"fd": True}, "junk"], "kept": 0},
                "o-2": {"file": "/etc/passwd"}}
        routed = sent_for(sent, "o-1", worker)
        assert routed["fds"] == [first[1], first[0], -1, -1, -1] and routed["kept"] == 0
        assert routed["path"] == str(worker.outbox / "o-1.pt")
        assert sent_for(sent, "o-2", worker) == {"file": str(worker.outbox / "o-2.pt")}  # never its own path
        worker.requests.sendall(b"\0")
        worker.receive(60)
        assert worker.reply_fds() == []
        for fd in first:
            with pytest.raises(OSError):
                os.fstat(fd)
        worker.requests.sendall(b"\0")
        with pytest.raises(processes.WorkerForgery) as caught:
            worker.receive(60)
        assert "forged file descriptors" in str(caught.value) and "1 arrived" in str(caught.value)
        assert worker.process.poll() is not None and worker.reply_fds() == []
    finally:
        worker.kill()


def test_the_real_sender_sends_what_the_parent_reads():
    parent_end, child_end = socket.socketpair()
    script = ("import os, sys, tempfile; from evaluator.sandboxed import handoff; "
              "f = [tempfile.TemporaryFile() for _ in range(3)]; handoff.fd_sender(0)([x.fileno() for x in f]); "
              "print('sent', flush=True); sys.stdin.buffer.read(1)")
    child = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdin=child_end.fileno(),
                             stdout=subprocess.PIPE)
    child_end.close()
    try:
        assert child.stdout is not None and child.stdout.readline() == b"sent\n"
        fds = processes.receive_declared_fds(parent_end, 3)
        assert len(fds) == 3
        for fd in fds:
            os.close(fd)
    finally:
        parent_end.close()
        child.kill()
        child.wait()


def test_a_compare_request_carries_each_outputs_descriptors_numbered_in_it():
    vmm = [{"fd": 5, "dtype": "float32"}, {"fd": 9}]
    request = {"op": "compare", "key": KEY, "outputs": [
        {"name": "a", "sent": {"vmm": vmm, "fds": [40, 41], "kept": 0, "path": "a.pt"}},
        {"name": "b", "sent": {"file": "b.pt"}},
        {"name": "c", "sent": {"vmm": [{"fd": 0}, {"fd": 1}, "junk"], "fds": [42, -1]}},
    ]}
    numbered, fds = attach_handoff_fds(request)
    assert fds == [40, 41, 42]
    a, b, c = (o["sent"] for o in numbered["outputs"])
    assert [d["fd"] for d in a["vmm"]] == [0, 1] and "fds" not in a and a["vmm"][0]["dtype"] == "float32"
    assert b == {"file": "b.pt"}
    assert [d["fd"] for d in c["vmm"]] == [2, None, None]
    assert request["outputs"][0]["sent"]["vmm"][0]["fd"] == 5  # the caller's request is left as it was
    assert attach_handoff_fds({"op": "load", "outputs": []}) == ({"op": "load", "outputs": []}, [])


def test_a_compare_request_never_carries_more_descriptors_than_one_message_holds():
    many = [{"name": str(k), "sent": {"vmm": [{}], "fds": [100 + k]}} for k in range(wire.MAX_FDS_PER_MESSAGE + 3)]
    numbered, fds = attach_handoff_fds({"op": "compare", "outputs": many})
    assert len(fds) == wire.MAX_FDS_PER_MESSAGE
    assert [o["sent"]["vmm"][0]["fd"] for o in numbered["outputs"][-3:]] == [None, None, None]


GRANULE = 1 << 21


def _descriptor(**change) -> dict:
    good = {"fd": 0, "device": 0, "size_bytes": GRANULE, "dtype": "float32", "shape": [4, 4], "stride": [4, 1],
            "storage_offset": 0, "fingerprint": 1}
    return {**good, **change}


def test_a_valid_descriptor_is_accepted():
    (d,) = handoff.validate_vmm([_descriptor(shape=[512, 1024], stride=[1024, 1])], 1, GRANULE, 80 << 30)
    assert d.bytes_needed() == GRANULE


@pytest.mark.parametrize("descriptors,fd_count,why", [
    ([_descriptor(dtype="object")], 1, "malformed"),
    ([_descriptor(shape="4x4")], 1, "malformed"),
    ([_descriptor(fingerprint="x")], 1, "malformed"),
    ([_descriptor(fd=True)], 1, "malformed"),  # strict: a bool is no index
    ([_descriptor(extra=1)], 1, "malformed"),
    ([_descriptor(fd=None)], 1, "without a file descriptor"),
    ([_descriptor(fd=1)], 1, "without a file descriptor"),
    ([_descriptor(), _descriptor()], 2, "without a file descriptor"),  # two outputs on one allocation
    ([_descriptor(stride=[-4, 1])], 1, "out of range"),
    ([_descriptor(shape=[4])], 1, "out of range"),
    ([_descriptor(size_bytes=GRANULE + 1)], 1, "granularity"),
    ([_descriptor(size_bytes=0)], 1, "granularity"),
    ([_descriptor(size_bytes=GRANULE * 64)], 1, "granularity"),  # more than the device has
    ([_descriptor(shape=[GRANULE // 4 + 1], stride=[1])], 1, "past its allocation"),
    ([_descriptor(shape=[2, 4], stride=[GRANULE // 4, 1])], 1, "layout the harness never exports"),
    ([_descriptor(storage_offset=GRANULE // 4 - 15)], 1, "layout the harness never exports"),
    ([], 0, "no list"),
    ({"fd": 0}, 1, "no list"),
])
def test_descriptors_are_validated_before_anything_is_mapped(descriptors, fd_count, why):
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.validate_vmm(descriptors, fd_count, GRANULE, GRANULE * 32)
    assert caught.value.kind == "invalid" and why in str(caught.value)


def test_vmm_outputs_without_a_key_or_without_cuda_are_refused():
    for key, device in ((None, "cuda"), (KEY, "cpu")):
        with pytest.raises(handoff.HandoffError) as caught:
            handoff.receive({"vmm": [_descriptor()]}, device, key, [0])
        assert caught.value.kind == "invalid"


# -- on a GPU ------------------------------------------------------------------------------------
def _probe():
    spec = importlib.util.spec_from_file_location("sandbox_probe", ROOT / "bench" / "sandbox_probe.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.gpu
def test_an_output_reaches_a_sandboxed_reference_from_a_sandboxed_candidate_through_vmm():
    result = _probe().vmm_between_sandboxes("honest")
    assert result.get("ok"), json.dumps(result)[:2000]
    expected = result["expected_sum"]
    assert result["sums"] == [expected, expected]
    assert result["shapes"] == [[349523, 3], [3, 349523]] and result["dtypes"] == ["torch.float32", "torch.bfloat16"]
    assert result["access"] in ("read", "readwrite")


@pytest.mark.gpu
def test_a_write_into_an_exported_copy_after_the_call_is_caught():
    result = _probe().vmm_between_sandboxes("tamper")
    assert result.get("ok") is False and result.get("kind") == "tampered", json.dumps(result)[:2000]


@pytest.mark.gpu
def test_a_socket_sent_as_an_allocation_is_refused_by_the_parent():
    result = _probe().vmm_between_sandboxes("socket")
    assert "is a socket" in result.get("refused_by_parent", ""), json.dumps(result)[:2000]


@pytest.mark.gpu
def test_a_forged_descriptor_is_refused_by_the_reference_and_a_late_write_by_the_candidate(tmp_path: Path):
    import torch

    out = torch.randn(1000, 3, device="cuda")
    outbox = handoff.Outbox(KEY, "vmm")
    sent = outbox.send([out], tmp_path / "unused.pt", "call 1")
    assert "vmm" in sent, outbox.export_failed
    (fd,) = outbox.take_fds()
    forged = os.open(tmp_path / "forged", os.O_RDWR | os.O_CREAT)
    os.write(forged, b"\0" * 4096)
    try:
        (received,) = handoff.receive(sent, "cuda", KEY, [fd])
        assert torch.equal(received, out)
        with pytest.raises(handoff.HandoffError) as caught:
            handoff.receive(sent, "cuda", KEY, [forged])  # a regular file: the driver imports no allocation
        assert caught.value.kind == "unavailable"
        with pytest.raises(handoff.HandoffError) as caught:
            handoff.receive(sent, "cuda", KEY + 1, [fd])  # the wrong key never matches
        assert caught.value.kind == "tampered"
        out[0, 0] += 1.0  # a late write into the output already handed over
        assert outbox.changed_since_sent() == "output 0 of call 1"
    finally:
        os.close(fd)
        os.close(forged)
        outbox.release_exports()
