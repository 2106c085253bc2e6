"""A chunk's private work folder: created locked, removed by the chunk, swept once its owner is gone.

Every chunk works in one folder, ``<tmp>/kernelevo-<job id>-<random>``: the unpacked repository, the run
directory, and (through ``TMPDIR``) every temporary folder of the chunk's process and its children, the
evaluator's included. A chunk killed hard (SIGKILL, the OOM killer, Celery's time limit) cannot remove it, and
a worker's ``/tmp`` is a tmpfs: what is left behind is memory. So the folder's owner holds an exclusive
``flock`` on its ``.owner`` file for its whole life. The kernel drops that lock when the owner dies, however it
dies, so "the lock can be taken" means exactly "the owner is gone", on this host and across the containers that
share the folder, without PIDs (which PID namespaces make ambiguous) or modification times. The folder gets its
final name only once it is locked (it is made under a staging name, locked, then renamed), so a sweep never sees
a live folder unlocked. A folder without an ``.owner`` file (left by an older version) is decided from the job
store: removed once the store says its job is finished.
"""

from __future__ import annotations

import dataclasses
import enum
import fcntl
import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from workflows.models import JobState

if TYPE_CHECKING:
    from workflows.store import JobStore

log = logging.getLogger(__name__)

OWNER_FILE = ".owner"
STAGING_PREFIX = ".kernelevo-new-"
# A staging folder lives for microseconds (made, locked, renamed); one whose maker died in between is removed
# once its lock is free AND it is this old, since for an instant after its lock file exists it is not yet locked.
STAGING_STALE_S = 600.0
WORKDIR = re.compile(r"^kernelevo-(?P<job>job-[0-9a-f]{12})-[A-Za-z0-9_]{4,32}$")


class Owner(str, enum.Enum):
    """What a work folder's ``.owner`` lock says about the process that made it."""

    ALIVE = "alive"  # the lock is held: a live process works in the folder
    GONE = "gone"  # the lock could be taken: its owner died (or finished without removing it)
    UNKNOWN = "unknown"  # no lock file: a folder this module did not make


class Verdict(str, enum.Enum):
    REMOVE = "remove"
    KEEP = "keep"


def decide(owner: Owner, job_state: JobState | None, *, store_read: bool) -> Verdict:
    """Whether a sweep removes a work folder (pure). A live owner's folder is never removed, whatever its job's
    state (a fenced chunk still winding down removes its own); a dead owner's always is. Without a lock, only
    the job store's word that the job is finished removes it: a job the store does not know may belong to
    another deployment sharing this temporary folder (another Redis), so its folder stays, as does every folder
    while the store cannot be read."""
    if owner is Owner.ALIVE:
        return Verdict.KEEP
    if owner is Owner.GONE:
        return Verdict.REMOVE
    finished = store_read and job_state is not None and job_state.terminal
    return Verdict.REMOVE if finished else Verdict.KEEP


def job_state_in(store: JobStore) -> Callable[[str], JobState | None]:
    """``job_state`` for :func:`sweep`, read from the job store (None: no record, or past its retention), with
    no retries: a sweep never waits out a Redis outage, it keeps the folder for a later sweep."""
    from workflows.store import JobStore

    once = JobStore(store.client, limits=dataclasses.replace(store.limits, redis_retry_s=0.0), keys=store.keys)

    def state(job_id: str) -> JobState | None:
        record = once.get(job_id)
        return record.state if record is not None else None

    return state


def sweep_workdirs(store: JobStore, root: Path | None = None) -> SweepReport:
    """Remove the work folders of chunks that died on this host: after every chunk (in the chunk's process) and
    when a worker starts (:class:`workflows.celery_app.WorkdirSweepStep`). Never fails the caller."""
    try:
        return sweep(root, job_state_in(store))
    except Exception:
        log.exception("sweeping stale work folders failed")
        return SweepReport()


def work_root() -> Path:
    """Where work folders are made and swept: the process's temporary folder (``TMPDIR``, else ``/tmp``)."""
    return Path(tempfile.gettempdir())


@contextmanager
def chunk_workdir(job_id: str, root: Path | None = None) -> Iterator[Path]:
    """A fresh work folder for ``job_id`` holding its owner lock, with ``TMPDIR`` (and :mod:`tempfile`) pointed at
    its ``tmp/`` while it is open; removed on the way out (and by a later sweep if this process dies first)."""
    root = root or work_root()
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=root))
    fd = os.open(staging / OWNER_FILE, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, f"{os.getpid()}\n".encode())  # for a human looking; the lock is what counts
        final = root / f"kernelevo-{job_id}-{staging.name.removeprefix(STAGING_PREFIX)}"
        os.rename(staging, final)
        try:
            (final / "tmp").mkdir()
            with _temporary_files_in(final / "tmp"):
                yield final
        finally:
            shutil.rmtree(final, ignore_errors=True)
    finally:
        os.close(fd)  # the lock goes with the descriptor
        shutil.rmtree(staging, ignore_errors=True)  # only if the rename never happened


@contextmanager
def _temporary_files_in(folder: Path) -> Iterator[None]:
    """Temporary files of this process and its children go under ``folder`` (restored afterwards)."""
    saved_env, saved_tempdir = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = str(folder)
    try:
        yield
    finally:
        tempfile.tempdir = saved_tempdir
        if saved_env is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved_env


@dataclass
class SweepReport:
    removed: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)


def _probe_owner(folder_fd: int) -> tuple[Owner, int | None]:
    """The folder's owner state; for GONE, the lock file's descriptor, still locked (close it after removing)."""
    try:
        fd = os.open(OWNER_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder_fd)
    except FileNotFoundError:
        return Owner.UNKNOWN, None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return Owner.ALIVE, None
    except BaseException:
        os.close(fd)
        raise
    return Owner.GONE, fd


def sweep(root: Path | None = None, job_state: Callable[[str], JobState | None] | None = None, *,
          now: Callable[[], float] = time.time) -> SweepReport:
    """Remove the work folders under ``root`` whose owner is gone, and lockless ones whose job is finished.

    ``job_state(job_id)`` reads the job store (None: no such job); it raises where the store cannot be read,
    and is only asked about folders without a lock. Only this user's real folders with the work-folder name
    are looked at; links and everything else are left alone."""
    root = root or work_root()
    report = SweepReport()
    try:
        entries = list(os.scandir(root))
    except OSError as exc:
        log.warning("cannot list %s for stale work folders: %s", root, exc)
        return report
    for entry in entries:
        match = WORKDIR.match(entry.name)
        staging = entry.name.startswith(STAGING_PREFIX)
        if (match is None and not staging) or not entry.is_dir(follow_symlinks=False):
            continue
        path = Path(entry.path)
        try:
            info = entry.stat(follow_symlinks=False)
            if info.st_uid != os.getuid():
                continue
            if staging and now() - info.st_mtime < STAGING_STALE_S:
                continue
            folder_fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue  # gone meanwhile, or not ours to open
        lock_fd = None
        try:
            owner, lock_fd = _probe_owner(folder_fd)
            state, store_read = None, False
            if staging:  # never decided by the store: only a free lock on an old staging folder removes it
                owner = Owner.ALIVE if owner is Owner.UNKNOWN else owner
            elif owner is Owner.UNKNOWN and job_state is not None and match is not None:
                try:
                    state, store_read = job_state(match["job"]), True
                except Exception as exc:  # Redis away: keep the folder, a later sweep decides
                    log.warning("cannot read job %s to sweep %s: %s", match["job"], path, exc)
            if decide(owner, state, store_read=store_read) is Verdict.REMOVE:
                shutil.rmtree(path, ignore_errors=True)
                report.removed.append(path)
            else:
                report.kept.append(path)
        finally:
            if lock_fd is not None:
                os.close(lock_fd)
            os.close(folder_fd)
    if report.removed:
        log.info("removed %d stale work folder(s) under %s: %s", len(report.removed), root,
                 ", ".join(p.name for p in report.removed[:10]))
    return report
