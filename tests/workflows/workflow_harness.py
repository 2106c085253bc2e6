"""Real processes for the worker-tier tests: a redis-server on a free loopback port and `kernelevo worker`s.

Everything started here runs in its own process group and is killed (the whole group) by ``stop``, which
the fixtures call as finalizers even when a test fails. Waiting is always for a condition, with a
generous timeout; nothing asserts how long anything took.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import redis

ROOT = Path(__file__).resolve().parents[2]
SCALE_ADD = ROOT / "tests" / "search" / "data" / "scale_add.py"
T = TypeVar("T")

# Short chunks so that a tiny search needs several; short leases so that recovery is quick.
QUEUE_ENV = {
    "KERNELEVO_QUEUE_CHUNK_S": "2",
    "KERNELEVO_QUEUE_VISIBILITY_TIMEOUT_S": "900",
    "KERNELEVO_QUEUE_HEARTBEAT_S": "0.5",
    "KERNELEVO_QUEUE_HEARTBEAT_TTL_S": "3",
    "KERNELEVO_QUEUE_REAPER_INTERVAL_S": "1",
    "KERNELEVO_QUEUE_LOCK_RETRY_S": "3",
    "KERNELEVO_QUEUE_REDIS_RETRY_S": "90",
}


def wait_for(condition: Callable[[], T], what: str, timeout: float = 240.0, interval: float = 0.1) -> T:
    """Poll ``condition`` until it returns something truthy; fail with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kill_group(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


class RedisServer:
    """``redis-server deploy/redis.conf`` on a free port with its data in ``directory``."""

    def __init__(self, directory: Path, appendonly: bool = True) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            import pytest

            pytest.skip("redis-server is not installed (apt-get install -y redis-server)")
        self.binary, self.directory, self.appendonly = binary, Path(directory), appendonly
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_connect_timeout=5)

    def start(self) -> RedisServer:
        args = [self.binary, str(ROOT / "deploy" / "redis.conf"), "--port", str(self.port), "--dir",
                str(self.directory), "--appendonly", "yes" if self.appendonly else "no", "--maxmemory", "1gb"]
        log = (self.directory / "redis.log").open("ab")
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        client = self.client()

        def up() -> bool:
            try:
                return bool(client.ping())
            except redis.RedisError:
                assert self.proc.poll() is None, "redis-server exited; see redis.log"
                return False

        wait_for(up, "redis-server to accept connections", timeout=30)
        return self

    def shutdown(self) -> None:
        """A clean stop (Redis flushes the append-only file), as an operator's restart does."""
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            self.client().shutdown()
        except redis.ConnectionError:
            pass
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            _kill_group(self.proc)
            self.proc.wait(30)


class Worker:
    """``kernelevo worker --device cpu --name NAME`` in its own process group."""

    def __init__(self, name: str, redis_url: str, directory: Path, extra_env: dict[str, str] | None = None,
                 cache: Path | None = None) -> None:
        self.name, self.node = name, f"{name}@{socket.gethostname()}"
        self.log_path = Path(directory) / f"{name}.log"
        cache = cache or Path(directory) / "cache"
        # The test's workers share one temporary folder, as a host's workers share /tmp: their chunks' work
        # folders (workflows.workdirs) are made and swept there, never among other test runs' on this machine.
        self.tmp = Path(directory) / "tmp"
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.env = {**os.environ, **QUEUE_ENV, "KERNELEVO_REDIS_URL": redis_url,
                    "KERNELEVO_CACHE_DIR": str(cache), "TMPDIR": str(self.tmp), **(extra_env or {})}
        self.env.pop("KERNELEVO_WORKER_DEVICE", None)
        self.proc: subprocess.Popen | None = None

    def start(self) -> Worker:
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kernelevo.cli", "worker", "--device", "cpu", "--name", self.name,
             "--loglevel", "info"], env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            cwd=ROOT)

        def ready() -> bool:
            assert self.proc.poll() is None, f"worker {self.name} exited:\n{self.log()[-3000:]}"
            return " ready." in self.log()

        wait_for(ready, f"worker {self.name} to be ready", timeout=120)
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def kill9(self) -> None:
        """``kill -9`` of the worker and its chunk process (its whole process group)."""
        assert self.proc is not None
        _kill_group(self.proc)
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            _kill_group(self.proc)
            self.proc.wait(30)


def parent_pid(pid: int) -> int | None:
    """The parent of ``pid`` (from /proc), or None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1])


def make_repo(path: Path, *files: tuple[str, str]) -> Path:
    """A repository folder (``.git`` marks its root) holding ``scale_add.py`` and ``files``."""
    (path / ".git").mkdir(parents=True, exist_ok=True)
    shutil.copy(SCALE_ADD, path / "scale_add.py")
    for name, text in files:
        (path / name).write_text(text)
    return path


def settings_for(redis_url: str, **overrides: Any) -> Any:
    """Settings as the workers see them (the test process talks to the same Redis)."""
    from kernelevo.settings import Settings

    values = {k.removeprefix("KERNELEVO_").lower(): v for k, v in QUEUE_ENV.items()}
    return Settings(redis_url=redis_url, **{**values, **overrides})


def build_spec(jobs: Any, repo: Path, *, candidates=4, seed=0, commit=None, generation_size=2,
               op_id="scale_add.py::Model", device="cpu", pr=None):
    from workflows.models import Budgets, JobSpec, Origin, OriginKind, SearchShape
    from workflows.repo_tarball import pack_repo

    source = jobs.upload_repo(pack_repo(repo, max_unpacked_bytes=2**26, max_files=1000))
    return JobSpec(repo="local/test", commit_sha=commit or source.sha256, op_id=op_id, source=source, device=device,
                   proposer="offline", budgets=Budgets(candidates=candidates, plateau_generations=50),
                   shape=SearchShape(generation_size=generation_size), seed=seed,
                   origin=Origin(kind=OriginKind.CLI if pr is None else OriginKind.PR, pr_number=pr))
