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

Mirroring: a :class:`RunMirror` sees every record and file as it is written, after it is on disk (the
worker tier keeps a copy of each run in Redis, so that any worker can continue it). Attach one to a
directory with :func:`mirrored` (every ``RunDir`` opened on that path in this process then reports to
it) or pass it to ``RunDir``; :func:`restore_run_dir` writes such a copy back into a fresh directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any, Protocol


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


class RunMirror(Protocol):
    """Receives a copy of everything a run directory writes, in the order it is written.

    ``name`` is the file's path relative to the run directory, in POSIX form (``archive.jsonl``,
    ``best/kernel.py``). A mirror that raises makes the write raise (after the local write), which
    stops the search: a worker that lost its claim on a job must not go on.
    """

    def appended(self, name: str, line: str) -> None:
        """One line (with its newline) was appended to ``name``."""
        ...

    def replaced(self, name: str, text: str) -> None:
        """``name`` was (re)written whole with ``text``."""
        ...


_mirrors: dict[Path, RunMirror] = {}
_mirrors_lock = threading.Lock()


@contextlib.contextmanager
def mirrored(path: Path, mirror: RunMirror) -> Iterator[RunMirror]:
    """Within the block, every ``RunDir(path)`` opened in this process reports its writes to ``mirror``.

    Why a registry: callers such as ``run_search`` open the run directory themselves from a path."""
    key = Path(path).resolve()
    with _mirrors_lock:
        if key in _mirrors:
            raise RuntimeError(f"{key} already has a mirror attached")
        _mirrors[key] = mirror
    try:
        yield mirror
    finally:
        with _mirrors_lock:
            _mirrors.pop(key, None)


def mirror_for(path: Path) -> RunMirror | None:
    """The mirror attached to ``path`` with :func:`mirrored`, if any."""
    with _mirrors_lock:
        return _mirrors.get(Path(path).resolve())


def _relative_name(name: str) -> PurePosixPath:
    """``name`` as a safe relative path (no absolute path, no ``..``, no empty parts)."""
    rel = PurePosixPath(name)
    if rel.is_absolute() or not rel.parts or any(part in ("", ".", "..") for part in rel.parts) or "\\" in name:
        raise ValueError(f"{name!r} is not a file name inside a run directory")
    return rel


def restore_run_dir(path: Path, files: Mapping[str, str]) -> None:
    """Write a mirrored copy of a run (file name -> full text) into ``path``, which must hold no run yet.

    Every name is checked to stay inside ``path``; ``run.json`` is written last, so a directory
    interrupted while being restored is not taken for a run."""
    path = Path(path)
    if (path / "run.json").exists():
        raise FileExistsError(f"{path} already holds a run; restore into an empty directory")
    path.mkdir(parents=True, exist_ok=True)
    names = sorted(files, key=lambda name: name == "run.json")
    for name in names:
        target = path.joinpath(*_relative_name(name).parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(target, files[name])


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
    """Reads and appends the files of one run directory (thread-safe appends).

    ``mirror`` (default: the one attached to ``path`` with :func:`mirrored`) gets a copy of each write.
    """

    def __init__(self, path: Path, mirror: RunMirror | None = None) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self.mirror = mirror if mirror is not None else mirror_for(self.path)

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
        self._write(self.meta_path, json.dumps(meta, indent=2, default=str))

    def read_meta(self) -> dict[str, Any]:
        """The run's ``run.json``; a clear error when the directory is not a run or run.json is unreadable."""
        try:
            text = self.meta_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise FileNotFoundError(f"{self.path} is not a run directory (no run.json)") from None
        try:
            meta: dict[str, Any] = json.loads(text)
            return meta
        except json.JSONDecodeError as exc:
            message = (f"{self.meta_path} is empty or corrupt ({exc}); the process that created the run was"
                       f" probably killed while starting it: delete {self.path} and start a new run")
            raise ValueError(message) from None

    def prepare_resume(self) -> None:
        """Cut half-written last lines left by a killed process, so appends start on a fresh line."""
        for path in (self.proposals_path, self.archive_path):
            cut_partial_line(path)

    def _name(self, path: Path) -> str:
        return path.relative_to(self.path).as_posix()

    def _append(self, path: Path, record: dict[str, Any]) -> None:
        line = json.dumps(record, default=str) + "\n"
        with self._lock:  # the mirror sees lines in file order
            with path.open("a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
            if self.mirror is not None:
                self.mirror.appended(self._name(path), line)

    def _write(self, path: Path, text: str) -> None:
        with self._lock:
            _atomic_write(path, text)
            if self.mirror is not None:
                self.mirror.replaced(self._name(path), text)

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
        self._write(self.best_dir / "kernel.py", source)
        self._write(self.best_dir / "verdict.json", json.dumps(verdict, indent=2, default=str))
        self._write(self.best_dir / "candidate.json", json.dumps(info, indent=2, default=str))

    def write_summary(self, summary: dict[str, Any]) -> None:
        self._write(self.summary_path, json.dumps(summary, indent=2, default=str))
