"""The run directory: durable, append-only records of a search, and the files made from them.

Layout of ``runs/<timestamp>-<op>/``:

- ``run.json``        what was asked (task, op, backend, proposer, seed, device, budget, config)
- ``proposals.jsonl`` every proposer reply, one line per slot, written as soon as it arrives
- ``archive.jsonl``   every candidate with its verdict and fitness, written as soon as it is judged
- ``best/``           the best kernel so far (``kernel.py``) and its ``verdict.json``
- ``summary.json``    the run's result and every stop reason (the report's input)

Lines are appended, flushed and fsynced one at a time, so ``kill -9`` loses at most the line being
written; a truncated last line is cut off when the run is resumed.

Several searches may start at once (one per GPU, the same second): ``reserve_run_dir`` claims each a
directory of its own with an atomic ``mkdir``, and ``RunDir.create`` claims ``run.json`` with an
exclusive create, so two processes never share a run.
"""

from __future__ import annotations

import json
import os
import re
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every complete JSON line of ``path`` (missing file: none). A broken last line is ignored."""
    if not path.exists():
        return []
    records = []
    lines = path.read_text(encoding="utf-8").split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            if number >= len(lines) - 1:  # the last line, cut short by a kill
                break
            raise ValueError(f"{path}:{number}: corrupt record in the middle of the file ({exc})") from exc
    return records


def cut_partial_line(path: Path) -> bool:
    """Truncate ``path`` after its last newline (a record a kill left half-written). True if cut."""
    if not path.exists():
        return False
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return False
    with path.open("r+b") as handle:
        handle.truncate(data.rfind(b"\n") + 1)
    return True


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


_MAX_RESERVE_TRIES = 10_000


def _run_dir_name(op_id: str, now: datetime) -> str:
    """``<UTC timestamp>-<op>``, with the op id made safe for a directory name."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", op_id).strip("._") or "op"
    return f"{now.astimezone(timezone.utc):%Y%m%d-%H%M%S}-{slug[:80]}"


def reserve_run_dir(parent: Path, op_id: str, now: datetime) -> Path:
    """Claim a new, empty run directory ``<parent>/<UTC timestamp>-<op>[-N]`` and return its path.

    Each name is claimed with an atomic ``mkdir`` (no existence check first), trying ``<name>``,
    ``<name>-2``, ``<name>-3``, ... so processes started in the same second each get their own
    directory. ``parent`` is created if missing.
    """
    parent = Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    base = _run_dir_name(op_id, now)
    for number in range(1, _MAX_RESERVE_TRIES + 1):
        path = parent / (base if number == 1 else f"{base}-{number}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"{parent}: {base} and {_MAX_RESERVE_TRIES - 1} numbered variants already exist;"
                          " remove old run directories or choose another parent directory")


class RunDir:
    """Reads and appends the files of one run directory (thread-safe appends)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    meta_path = property(lambda self: self.path / "run.json")
    proposals_path = property(lambda self: self.path / "proposals.jsonl")
    archive_path = property(lambda self: self.path / "archive.jsonl")
    summary_path = property(lambda self: self.path / "summary.json")
    best_dir = property(lambda self: self.path / "best")

    def create(self, meta: dict[str, Any]) -> None:
        """Start a new run here by writing ``run.json``; refuses a directory that already holds a run.

        The directory may exist already (empty, as ``reserve_run_dir`` leaves it). ``run.json`` is
        claimed with an exclusive create before its content is written, so of two processes given
        the same directory exactly one starts the run and the other gets ``FileExistsError``.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        try:
            os.close(os.open(self.meta_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            raise FileExistsError(f"{self.path} already holds a run; resume it with --resume {self.path}") from None
        _atomic_write(self.meta_path, json.dumps(meta, indent=2, default=str))

    def read_meta(self) -> dict[str, Any]:
        """The run's ``run.json``; a clear error when the directory is not a run or run.json is unreadable."""
        try:
            text = self.meta_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise FileNotFoundError(f"{self.path} is not a run directory (no run.json)") from None
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            message = (f"{self.meta_path} is empty or corrupt ({exc}); the process that created the run was"
                       f" probably killed while starting it: delete {self.path} and start a new run")
            raise ValueError(message) from None

    def prepare_resume(self) -> None:
        """Cut half-written last lines left by a killed process, so appends start on a fresh line."""
        for path in (self.proposals_path, self.archive_path):
            cut_partial_line(path)

    def _append(self, path: Path, record: dict[str, Any]) -> None:
        line = json.dumps(record, default=str) + "\n"
        with self._lock, path.open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    def append_proposal(self, record: dict[str, Any]) -> None:
        """Durably record one proposer reply (a slot)."""
        self._append(self.proposals_path, record)

    def append_candidate(self, record: dict[str, Any]) -> None:
        """Durably record one judged candidate."""
        self._append(self.archive_path, record)

    def proposals(self) -> list[dict[str, Any]]:
        return read_jsonl(self.proposals_path)

    def candidates(self) -> list[dict[str, Any]]:
        return read_jsonl(self.archive_path)

    def write_best(self, source: str, verdict: dict[str, Any] | None, info: dict[str, Any]) -> None:
        """Replace ``best/`` with the new best kernel, its verdict and where it came from."""
        self.best_dir.mkdir(parents=True, exist_ok=True)
        _atomic_write(self.best_dir / "kernel.py", source)
        _atomic_write(self.best_dir / "verdict.json", json.dumps(verdict, indent=2, default=str))
        _atomic_write(self.best_dir / "candidate.json", json.dumps(info, indent=2, default=str))

    def write_summary(self, summary: dict[str, Any]) -> None:
        _atomic_write(self.summary_path, json.dumps(summary, indent=2, default=str))
