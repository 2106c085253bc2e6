"""The verifier's sandboxed processes, seen from the parent: start them, talk to them, end them.

Every reference, candidate and proposer process is a fresh Python (spawned, never forked: a forked CUDA
context is unusable) inside its own sandbox (:mod:`kernelevo.sandbox`, with the view
:mod:`evaluator.roles` gives its role), with a host-memory cap and a wall-clock limit per request.
Candidate processes are started ahead of need (:class:`WorkerPool`) so that Python/torch/CUDA start-up
overlaps the previous evaluation.

Channels: requests (JSON lines, and file descriptors passed with ``SCM_RIGHTS``: inputs, weights)
go over a Unix socket; replies come back on a dedicated write-only pipe, each carrying a per-process
nonce. A reply may declare file descriptors (``nfds``: a candidate's outputs exported as CUDA VMM allocations),
which the process sent over the socket just before it: the parent reads exactly that many, in one message, and
only descriptors that can be an allocation's (:func:`refused_descriptor`), close-on-exec. A reply line longer
than :data:`MAX_REPLY_BYTES`, or one JSON cannot decode, is a forgery (the process is killed). The nonce and the
pipe's number travel in the first message on the socket, never on the command line or in the environment, so code
in the process cannot read them from ``/proc/self``. The child's
stdout/stderr (where candidate prints land) go to a log file: printing cannot forge a reply nor block
the parent.
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import select
import shutil
import socket
import stat
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator import roles
from kernelevo import sandbox

PROJECT_ROOT = roles.PROJECT_ROOT
_COUNTER = itertools.count(1)


class WorkerDied(Exception):
    """The worker process ended (crash, os._exit, kill) before replying."""

    def __init__(self, message: str, returncode: int | None, signal_name: str | None = None):
        super().__init__(message)
        self.returncode = returncode
        self.signal_name = signal_name


class WorkerForgery(WorkerDied):
    """The worker broke the channel's protocol in a way its harness never does (a reply without the nonce, file
    descriptors it did not declare, more or fewer than it declared, or ones that are no allocation's): code in
    the process rewrote the harness. The sandbox was killed."""


class FdProtocolError(ValueError):
    """Declared file descriptors did not arrive as declared (see :func:`receive_declared_fds`)."""


# The most descriptors one message carries, either way; the sandboxed side's own copy is
# evaluator.sandboxed.wire.MAX_FDS_PER_MESSAGE (this side never imports it; a test holds them equal).
MAX_FDS_PER_MESSAGE = 64
NVIDIA_CHAR_MAJOR = 195  # /dev/nvidiactl's major number: the driver exports allocations as descriptors of it
FD_ARRIVAL_S = 10.0  # the descriptors are sent before the reply: they are in the socket when it is read
# The longest reply line read (a few MB at most from any harness): a process writing more without a newline is
# killed instead of growing the parent's memory for as long as its time limit lasts.
MAX_REPLY_BYTES = 256 << 20


def readable_within(fd: int, timeout_s: float) -> bool:
    """Whether ``fd`` can be read (or is at its end) within ``timeout_s``: poll, which, unlike select, takes any
    descriptor number (a busy parent's sockets and pipes pass 1024)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(max(0, int(timeout_s * 1000))))


def refused_descriptor(mode: int, rdev: int) -> str | None:
    """Why a descriptor a worker sent cannot be an exported allocation (None: it can): the NVIDIA driver's
    exports are descriptors of its control device, other drivers' are anonymous inodes or regular files; a
    socket, directory, FIFO or another device could reach something outside the worker's sandbox."""
    kind = stat.S_IFMT(mode)
    if kind == 0 or stat.S_ISREG(mode):  # anonymous inodes have no file type bits
        return None
    if stat.S_ISCHR(mode) and os.major(rdev) == NVIDIA_CHAR_MAJOR:
        return None
    names = {stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory", stat.S_IFIFO: "a FIFO",
             stat.S_IFBLK: "a block device", stat.S_IFLNK: "a link", stat.S_IFCHR: "another character device"}
    return names.get(kind, f"a file of type {kind:#o}")


def receive_declared_fds(channel: socket.socket, declared: int, timeout_s: float = FD_ARRIVAL_S) -> list[int]:
    """The ``declared`` descriptors a worker sent on ``channel`` (one byte carrying them), each checked with
    ``fstat``; raises :class:`FdProtocolError` (after closing whatever arrived) when they do not arrive within
    ``timeout_s``, arrive with no byte, more or fewer than declared, or one of them is refused. The kernel itself
    never hands over more than ``declared``: the excess is closed and the message marked truncated."""
    if type(declared) is not int or not 0 < declared <= MAX_FDS_PER_MESSAGE:
        raise FdProtocolError(f"a reply declared {declared!r} file descriptors (1 to {MAX_FDS_PER_MESSAGE} allowed)")
    if not readable_within(channel.fileno(), timeout_s):
        raise FdProtocolError(f"a reply declared {declared} file descriptors, none arrived within {timeout_s:.0f} s")
    try:
        data, fds, flags = _recv_fds(channel, declared)
    except OSError as exc:
        raise FdProtocolError(f"reading the declared file descriptors failed: {exc}") from exc
    try:
        if not data:
            raise FdProtocolError("the process closed its channel instead of sending declared file descriptors")
        if flags & socket.MSG_CTRUNC or len(fds) != declared:
            arrived = f"more than {declared}" if flags & socket.MSG_CTRUNC else str(len(fds))
            raise FdProtocolError(f"a reply declared {declared} file descriptors, {arrived} arrived")
        for k, fd in enumerate(fds):
            info = os.fstat(fd)
            refused = refused_descriptor(info.st_mode, info.st_rdev)
            if refused:
                raise FdProtocolError(f"file descriptor {k} of the reply is {refused}, not an exported allocation")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return fds


def _recv_fds(channel: socket.socket, most: int) -> tuple[bytes, list[int], int]:
    """One byte and at most ``most`` descriptors, without waiting and close-on-exec from the start (a descriptor
    the worker chose never reaches a process the parent starts). Not ``socket.recv_fds``: before Python 3.12 it
    drops its ``flags``. Room for exactly ``most`` (``CMSG_LEN``; ``CMSG_SPACE`` pads to one more when odd)."""
    data, ancillary, flags, _addr = channel.recvmsg(1, socket.CMSG_LEN(most * 4),
                                                    socket.MSG_DONTWAIT | socket.MSG_CMSG_CLOEXEC)
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            whole = len(payload) - len(payload) % 4
            fds += [int.from_bytes(payload[k:k + 4], sys.byteorder, signed=True) for k in range(0, whole, 4)]
    return data, fds, flags


class WorkerTimeout(Exception):
    """The worker did not reply within its wall-clock limit; its sandbox was killed."""


class WorkerMemoryExceeded(Exception):
    """The worker's sandbox used more host memory than allowed; it was killed."""


@dataclass
class Worker:
    """One sandboxed worker process and its channels."""

    process: sandbox.Sandboxed
    role: str
    requests: socket.socket
    result_fd: int
    log_path: Path
    private: Path  # its private folder (home/, bound as HOME; outbox/), writable inside the sandbox
    nonce: str
    memory_mb: int
    trace: Any = None  # evaluator.tracing.reader.TraceReader of the kernel-trace shim, on a GPU
    home: Path | None = None  # where its private home/ is as the process sees it (HOME: a drawn account's)
    _buffer: bytearray = field(default_factory=bytearray)  # reply bytes read past the last line
    _peak_rss_mb: float = field(default=0.0)
    _fds: list[int] = field(default_factory=list)  # what the last reply declared (owned here: see reply_fds)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def outbox(self) -> Path:
        return self.private / "outbox"

    def request(self, payload: dict[str, Any], timeout_s: float, fds: Sequence[int] = ()) -> dict[str, Any]:
        """Send one request and wait for its reply, killing the sandbox on timeout."""
        self.send(payload, fds)
        return self.receive(timeout_s)

    def send(self, payload: dict[str, Any], fds: Sequence[int] = ()) -> None:
        """Queue a request (with file descriptors for the child) without waiting; see :meth:`receive`."""
        message = (json.dumps({**payload, "nfds": len(fds)}) + "\n").encode()
        try:
            if fds:  # the descriptors ride with the first bytes; a sendmsg a signal interrupts sent only some
                sent = socket.send_fds(self.requests, [message], list(fds))
                self.requests.sendall(message[sent:])
            else:
                self.requests.sendall(message)
        except OSError:
            pass  # receive() reports how the process ended

    def receive(self, timeout_s: float) -> dict[str, Any]:
        """The next reply, killing the sandbox on timeout."""
        return self._read_reply(timeout_s)

    def wait_ready(self, timeout_s: float) -> dict[str, Any]:
        """Wait for the start-up message (torch and triton imported, device initialised)."""
        return self._read_reply(timeout_s)

    def _read_reply(self, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        scanned = 0  # bytes of the buffer already known to hold no newline (each byte is searched once)
        while (end := self._buffer.find(b"\n", scanned)) < 0:
            scanned = len(self._buffer)
            if scanned > MAX_REPLY_BYTES:
                self.kill()
                raise WorkerForgery(f"a reply longer than {MAX_REPLY_BYTES >> 20} MB without a line end (no harness "
                                    "writes one)", self.process.returncode)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                raise WorkerTimeout(f"no reply within {timeout_s:.0f} s")
            self._check_memory()
            if not readable_within(self.result_fd, min(remaining, 0.1)):
                if self.process.poll() is not None:
                    self._raise_died()
                continue
            chunk = os.read(self.result_fd, 1 << 20)
            if not chunk:
                try:
                    self.process.wait(timeout=5)
                except Exception:  # noqa: BLE001 - still running: killed below
                    pass
                self._raise_died()
            self._buffer += chunk
        line = bytes(self._buffer[:end])
        del self._buffer[:end + 1]
        try:
            reply = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: nesting deeper than the decoder's stack
            reply = {}
        if not isinstance(reply, dict) or reply.get("nonce") != self.nonce:
            self.kill()
            raise WorkerForgery("a reply without the session nonce (forged output?)", self.process.returncode)
        del reply["nonce"]  # the channel's own proof; nothing past the channel keeps it (run records, reports)
        self._close_fds()
        declared = reply.pop("nfds", 0)
        if declared != 0:
            try:
                self._fds = receive_declared_fds(self.requests, declared)
            except FdProtocolError as exc:
                self.kill()
                raise WorkerForgery(f"the candidate process's outputs came with forged file descriptors: {exc}",
                                    self.process.returncode) from exc
        return reply

    def reply_fds(self) -> list[int]:
        """The descriptors the last reply declared, in its numbering. They stay open (owned by this worker) until
        the next reply or :meth:`kill`, so the caller passes them on before asking anything else and never
        closes them."""
        return list(self._fds)

    def _close_fds(self) -> None:
        fds, self._fds = self._fds, []
        for fd in fds:
            os.close(fd)

    def _raise_died(self) -> None:
        code = self.process.returncode
        oom = self.process.oom_killed()
        self.kill()
        if oom:
            raise WorkerMemoryExceeded(f"was killed by the kernel for exceeding its memory cap ({self.memory_mb} MB)")
        what = _exit_description(code)
        raise WorkerDied(f"the {self.role} process {what} before reporting results", code, _signal_name(code))

    def _check_memory(self) -> None:
        rss = self.process.memory_mb()
        if rss is None:
            rss = process_tree_rss_mb(self.process.pid)
        self._peak_rss_mb = max(self._peak_rss_mb, rss)
        if rss > self.memory_mb:
            self.kill()
            raise WorkerMemoryExceeded(f"used {rss:.0f} MB of host memory (cap {self.memory_mb} MB)")

    @property
    def peak_rss_mb(self) -> float:
        return self._peak_rss_mb

    def log_tail(self, limit: int = 4000) -> str:
        """The last characters the process printed (candidate prints and tracebacks). The log lives outside
        every sandbox's writable folder and is opened without following links."""
        return read_tail(self.log_path, limit)

    def kill(self, keep_private: bool = False) -> None:
        """Kill the whole sandbox (the worker and anything it started), close the channels and remove its folder
        (``keep_private``: leave it for the caller to read first; then :meth:`remove_private`)."""
        self.process.kill()
        self._close_fds()
        for close in (self.requests.close, lambda: os.close(self.result_fd)):
            try:
                close()
            except OSError:
                pass
        if self.trace is not None:
            self.trace.close()
        if not keep_private:
            self.remove_private()

    def remove_private(self) -> None:
        shutil.rmtree(self.private, ignore_errors=True)  # rmtree never follows links out of the folder


def read_tail(path: Path, limit: int) -> str:
    """The last ``limit`` bytes of a regular file, never through a link (an untrusted process may have made it)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return ""
        os.lseek(fd, max(0, info.st_size - limit), os.SEEK_SET)
        return os.read(fd, limit).decode(errors="replace")
    finally:
        os.close(fd)


def _signal_name(code: int | None) -> str | None:
    if code is None or code >= 0:
        return None
    import signal

    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _exit_description(code: int | None) -> str:
    # bwrap reports a signal death of the command as exit status 128 + signal
    if code is not None and 128 < code < 128 + 65:
        import signal

        try:
            return f"was killed by {signal.Signals(code - 128).name}"
        except ValueError:
            pass
    sig = _signal_name(code)
    return f"was killed by {sig}" if sig else f"exited with status {code}"


def process_tree_rss_mb(root: int) -> float:
    """Resident memory of a process and all its descendants, in MB (0 where /proc is unavailable)."""
    children: dict[int, list[int]] = {}
    rss_kb: dict[int, int] = {}
    page_kb = os.sysconf("SC_PAGE_SIZE") // 1024
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0.0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().rsplit(b")", 1)[1].split()
            with open(f"/proc/{entry}/statm", "rb") as f:
                resident = int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue
        pid, ppid = int(entry), int(stat[1])
        children.setdefault(ppid, []).append(pid)
        rss_kb[pid] = resident * page_kb
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss_kb.get(pid, 0)
        stack.extend(children.get(pid, ()))
    return total / 1024


def spawn_worker(role: str, device: str, workdir: Path, memory_mb: int, *, read_only: Sequence[Path] = (),
                 writable: Sequence[Path] = (), env_extra: dict[str, str] | None = None,
                 pass_fds: Sequence[int] = (), wrapper: Sequence[str] = (), trace: Any = None,
                 workspace: str | None = None) -> Worker:
    """Start a sandboxed worker of ``role`` (it imports torch/triton and initialises the device, then waits);
    ``wrapper``: a tool the process runs under inside the sandbox (compute-sanitizer). ``trace``: an
    :class:`evaluator.tracing.build.BuiltShim`: the process is started with the kernel-trace shim preloaded and
    its authenticated record stream is read here (``Worker.trace``). ``workspace``: the folder of the neutral home
    the process works in (:func:`evaluator.roles.policy`).

    Raises :class:`kernelevo.sandbox.IsolationUnavailable` when no sandbox can be set up here (and
    ``KERNELEVO_ISOLATION`` is not ``off``).
    """
    report = sandbox.require_isolation(f"the verifier's {role} process")
    private = workdir / f"w{next(_COUNTER)}{secrets.token_hex(4)}"  # names say nothing about the role
    (private / "outbox").mkdir(parents=True)
    log_dir = workdir / "logs"  # outside the process's writable folder: it cannot swap its log for a link
    log_dir.mkdir(exist_ok=True)
    log_path = log_dir / f"{private.name}.log"
    nonce = secrets.token_hex(16)
    policy = roles.policy(role, device, private, read_only=read_only, writable=writable,
                          memory_mb=memory_mb if report.cgroup_parent else None, workspace=workspace)
    channel = None
    if trace is not None:
        from evaluator.tracing.reader import TraceChannel

        channel = TraceChannel.open(trace.library, trace.cupti_library, expected_exe=os.path.realpath(sys.executable))
        env_extra = {**(env_extra or {}), **channel.child_env()}
        pass_fds = (*pass_fds, *channel.child_fds())
        policy = roles.policy(role, device, private, read_only=[*read_only, trace.library.parent,
                                                                *([trace.cupti_library.parent]
                                                                  if trace.cupti_library else [])],
                              writable=writable, memory_mb=memory_mb if report.cgroup_parent else None,
                              workspace=workspace)
    if env_extra:
        policy = policy.model_copy(update={"env": {**policy.env, **env_extra}})
    # -I: no user site, no PYTHON* variables; the parent's import path is passed explicitly instead
    # (wheels unpacked to a folder on PYTHONPATH must still be importable by the worker).
    search_path = [str(PROJECT_ROOT)] + [p for p in sys.path if p and Path(p).is_dir() and p != str(PROJECT_ROOT)]
    # Only the folders that exist in the sandbox's view: an unbound one (a test runner's folder under /tmp) would
    # make importlib.metadata list it while the candidate imports, which the guards refuse.
    bootstrap = ("import sys, json, os; sys.path[:0] = [p for p in json.loads(sys.argv[1]) if os.path.isdir(p)]; "
                 "from evaluator.sandboxed.entry import main; main()")
    parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    read_fd, write_fd = os.pipe()
    try:
        with open(log_path, "wb") as log:
            command = [*wrapper, sys.executable, "-I", "-c", bootstrap, json.dumps(search_path)]
            process = sandbox.spawn(policy, command, report,
                                    stdin=child_end.fileno(), stdout=log, stderr=log,
                                    pass_fds=(write_fd, *pass_fds))
    except BaseException:
        for fd in (read_fd,):
            os.close(fd)
        parent_end.close()
        if channel is not None:
            channel.abandon()
        raise
    finally:
        child_end.close()
        os.close(write_fd)
    home = Path(policy.env["HOME"]) if "HOME" in policy.env else None
    if home is not None and report.mode is sandbox.IsolationMode.OFF:  # no mounts: the folder where it is
        home = sandbox.host_view_path(policy, home)
    worker = Worker(process=process, role=role, requests=parent_end, result_fd=read_fd, log_path=log_path,
                    private=private, nonce=nonce, memory_mb=memory_mb,
                    trace=channel.start_reading() if channel is not None else None, home=home)
    hello = {"nonce": nonce, "result_fd": write_fd, "role": role, "device": device, "memory_mb": memory_mb,
             "private": str(private), "isolation": report.mode.value,
             # the sandbox's own /tmp (a tmpfs of this process alone), where libraries write scratch files (Triton
             # builds its launcher there); without a sandbox /tmp is the host's and stays out of reach
             "scratch": sandbox.SANDBOX_TMP if report.mode is not sandbox.IsolationMode.OFF else None}
    worker.send(hello)
    return worker


class WorkerPool:
    """Keeps ``ready`` started candidate workers so that start-up overlaps the evaluations before them
    (one per evaluation that runs at once)."""

    def __init__(self, role: str, device: str, workdir: Path, memory_mb: int, prestart: bool = True, ready: int = 1,
                 **spawn_kwargs: Any):
        self._args = (role, device, workdir, memory_mb)
        self._kwargs = spawn_kwargs
        self._lock = threading.Lock()
        self._ready = max(1, ready) if prestart else 0
        self._started: list[Worker] = [self._spawn() for _ in range(self._ready)]

    def _spawn(self) -> Worker:
        return spawn_worker(*self._args, **self._kwargs)

    def take(self) -> Worker:
        """A started worker (a pre-started one if any); starts its replacement."""
        with self._lock:
            worker = self._started.pop(0) if self._started else self._spawn()
            while len(self._started) < self._ready:
                self._started.append(self._spawn())
        return worker

    def close(self) -> None:
        with self._lock:
            for worker in self._started:
                worker.kill()
            self._started.clear()
