"""Worker processes: one fresh, isolated Python process per candidate.

Every candidate runs in its own spawned process (never forked: a forked CUDA context is unusable),
in a new session so that a timeout kills the whole process group, with a scrubbed environment (no
tokens, no keys), a host-memory cap and a wall-clock limit per request. Processes are started ahead
of need (:class:`WorkerPool`) so that Python/torch/CUDA start-up overlaps the previous evaluation.

The parent talks to a worker over two pipes: requests go to the child's stdin, replies come back on
a dedicated result pipe. The child's stdout/stderr (where candidate prints land) go to a log file, so
a candidate cannot forge a reply by printing, nor block the parent by filling a pipe.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent

# Variables a candidate process may inherit. Anything else is dropped, and anything that looks like a
# credential is dropped even when listed (defence in depth).
_ENV_ALLOWLIST = (
    "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH",
    "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "TORCH_CUDA_ARCH_LIST",
    "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS", "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE", "TRITON_PTXAS_PATH", "TRITON_LIBCUDA_PATH", "CC", "CXX",
)
_SECRET_NAME = re.compile(r"TOKEN|SECRET|KEY|PASSWORD|PASSWD|CREDENTIAL|PRIVATE|AUTH|COOKIE|SESSION", re.I)


def candidate_environment(device: str, workdir: Path, cache_dir: Path, parent_env: dict[str, str] | None = None,
                          ) -> dict[str, str]:
    """The environment of a candidate process: an allowlist of the parent's, never a secret.

    Why: candidate code is untrusted; API keys, GitHub tokens and the App key live in the bot and
    the worker's parent process only.
    """
    source = os.environ if parent_env is None else parent_env
    env = {k: v for k, v in source.items() if k in _ENV_ALLOWLIST and not _SECRET_NAME.search(k)}
    home = workdir / "home"
    tmp = workdir / "tmp"
    home.mkdir(parents=True, exist_ok=True)
    tmp.mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home),
        TMPDIR=str(tmp),
        PYTHONHASHSEED="0",
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"),
        TRITON_CACHE_DIR=str(cache_dir / "triton"),
        TORCH_EXTENSIONS_DIR=str(cache_dir / "torch_extensions"),
        KERNELEVO_CACHE_DIR=str(cache_dir),
        MAX_JOBS=env.get("MAX_JOBS", "4"),  # bounded ninja parallelism for load_inline builds
    )
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


class WorkerDied(Exception):
    """The worker process ended (crash, os._exit, kill) before replying."""

    def __init__(self, message: str, returncode: int | None, signal_name: str | None = None):
        super().__init__(message)
        self.returncode = returncode
        self.signal_name = signal_name


class WorkerTimeout(Exception):
    """The worker did not reply within its wall-clock limit; its process group was killed."""


class WorkerMemoryExceeded(Exception):
    """The worker's process group used more host memory than allowed; it was killed."""


@dataclass
class Worker:
    """One spawned worker process and its pipes."""

    proc: subprocess.Popen
    role: str
    result_fd: int
    log_path: Path
    nonce: str
    memory_mb: int
    _buffer: bytes = b""
    _peak_rss_mb: float = field(default=0.0)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def request(self, payload: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send one request and wait for its reply, killing the process group on timeout."""
        self.send(payload)
        return self.receive(timeout_s)

    def send(self, payload: dict[str, Any]) -> None:
        """Queue a request without waiting (the worker reads it once it is ready); see :meth:`receive`."""
        message = json.dumps({**payload, "nonce": self.nonce}) + "\n"
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(message.encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # receive() reports how the process ended

    def receive(self, timeout_s: float) -> dict[str, Any]:
        """The next reply, killing the process group on timeout."""
        return self._read_reply(timeout_s)

    def wait_ready(self, timeout_s: float) -> dict[str, Any]:
        """Wait for the start-up message (torch and triton imported, device initialised)."""
        return self._read_reply(timeout_s)

    def _read_reply(self, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                raise WorkerTimeout(f"no reply within {timeout_s:.0f} s")
            self._check_memory()
            readable, _, _ = select.select([self.result_fd], [], [], min(remaining, 0.1))
            if not readable:
                if self.proc.poll() is not None:
                    self._raise_died()
                continue
            chunk = os.read(self.result_fd, 1 << 20)
            if not chunk:
                self.proc.wait(timeout=5)
                self._raise_died()
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        reply = json.loads(line)
        if reply.get("nonce") != self.nonce:
            self.kill()
            raise WorkerDied("reply without the session nonce (forged output?)", self.proc.returncode)
        return reply

    def _raise_died(self) -> None:
        code = self.proc.returncode
        sig = None
        if code is not None and code < 0:
            try:
                sig = signal.Signals(-code).name
            except ValueError:
                sig = f"signal {-code}"
        self.kill()
        what = f"killed by {sig}" if sig else f"exited with status {code}"
        raise WorkerDied(f"the {self.role} process {what} before reporting results", code, sig)

    def _check_memory(self) -> None:
        rss = process_group_rss_mb(self.proc.pid)
        self._peak_rss_mb = max(self._peak_rss_mb, rss)
        if rss > self.memory_mb:
            self.kill()
            raise WorkerMemoryExceeded(f"used {rss:.0f} MB of host memory (cap {self.memory_mb} MB)")

    @property
    def peak_rss_mb(self) -> float:
        return self._peak_rss_mb

    def log_tail(self, limit: int = 4000) -> str:
        """The last characters the process printed (candidate prints and tracebacks)."""
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return ""
        return data[-limit:].decode(errors="replace")

    def kill(self) -> None:
        """Kill the whole process group (the worker and anything it started)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self.proc.stdin,):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass
        try:
            os.close(self.result_fd)
        except OSError:
            pass


def process_group_rss_mb(pgid: int) -> float:
    """Resident memory of every process in a process group, in MB (0 where /proc is unavailable)."""
    total_kb = 0
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
            if int(stat[2]) != pgid:  # field 5 (pgrp), after pid and comm
                continue
            with open(f"/proc/{entry}/statm", "rb") as f:
                resident_pages = int(f.read().split()[1])
            total_kb += resident_pages * (os.sysconf("SC_PAGE_SIZE") // 1024)
        except (OSError, IndexError, ValueError):
            continue
    return total_kb / 1024


def spawn_worker(role: str, device: str, workdir: Path, cache_dir: Path, memory_mb: int) -> Worker:
    """Start a worker process (it imports torch/triton and initialises the device, then waits)."""
    workdir.mkdir(parents=True, exist_ok=True)
    read_fd, write_fd = os.pipe()
    nonce = secrets.token_hex(16)
    log_path = workdir / f"{role}-{nonce[:8]}.log"
    # -I: no user site, no PYTHON* variables; the parent's import path is passed explicitly instead
    # (wheels unpacked to a folder on PYTHONPATH must still be importable by the worker).
    bootstrap = (
        "import sys, json; sys.path[:0] = json.loads(sys.argv[1]); "
        "from evaluator.sandboxed.entry import main; main(sys.argv[2:])"
    )
    search_path = [str(PROJECT_ROOT)] + [p for p in sys.path if p and Path(p).is_dir() and p != str(PROJECT_ROOT)]
    args = [sys.executable, "-I", "-c", bootstrap, json.dumps(search_path), role, device, str(write_fd),
            str(memory_mb), nonce]
    env = candidate_environment(device, workdir, cache_dir)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(workdir),
            pass_fds=(write_fd,),
            start_new_session=True,
            close_fds=True,
        )
    os.close(write_fd)
    return Worker(proc=proc, role=role, result_fd=read_fd, log_path=log_path, nonce=nonce, memory_mb=memory_mb)


class WorkerPool:
    """Keeps ``ready`` started workers so that start-up overlaps the evaluations before them (one per
    evaluation that runs at once)."""

    def __init__(self, role: str, device: str, workdir: Path, cache_dir: Path, memory_mb: int,
                 prestart: bool = True, ready: int = 1):
        self._args = (role, device, workdir, cache_dir, memory_mb)
        self._lock = threading.Lock()
        self._ready = max(1, ready) if prestart else 0
        self._started: list[Worker] = [spawn_worker(*self._args) for _ in range(self._ready)]

    def take(self) -> Worker:
        """A started worker (a pre-started one if any); starts its replacement in the background."""
        with self._lock:
            worker = self._started.pop(0) if self._started else spawn_worker(*self._args)
            while len(self._started) < self._ready:
                self._started.append(spawn_worker(*self._args))
        return worker

    def close(self) -> None:
        with self._lock:
            for worker in self._started:
                worker.kill()
            self._started.clear()
