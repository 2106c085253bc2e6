"""A repository as a job carries it: a deterministic gzip tarball, and its safe unpacking on a worker.

Packing leaves out what is not the repository (``.git``, ``runs/``, caches, virtualenvs) and anything
that is not a regular file, a directory or a link staying inside the tree; the same tree always packs
to the same bytes (sorted, owner and times zeroed), so its SHA-256 names it. Unpacking treats the
tarball as hostile (:mod:`workflows.untar`, shared with the bot's checkouts): no link reaches the disk (a link
to a file of the tarball becomes a copy), absolute paths, ``..``, links out of the tree and device files are
refused, and caps on the unpacked size and file count stop a decompression bomb.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
from collections.abc import Iterator
from pathlib import Path

from workflows.untar import TarballError, unpack_tarball

EXCLUDED_DIRS = frozenset({
    ".git", "runs", "__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache", ".venv", "venv", ".tox",
    ".nox", "node_modules", ".ipynb_checkpoints", ".eggs",
})
EXCLUDED_SUFFIXES = (".pyc", ".pyo")


def _walk(root: Path) -> Iterator[Path]:
    """Every path to pack under ``root``, sorted, parents before children."""
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in EXCLUDED_DIRS and not d.endswith(".egg-info"))
        base = Path(directory)
        for name in dirs:
            yield base / name
        for name in sorted(files):
            if not name.endswith(EXCLUDED_SUFFIXES):
                yield base / name


def _inside(root: Path, link: Path) -> bool:
    try:
        return (link.parent / os.readlink(link)).resolve().is_relative_to(root)
    except OSError:
        return False


def pack_repo(root: Path, *, max_unpacked_bytes: int, max_files: int) -> bytes:
    """The gzip tarball of the repository at ``root`` (see the module docstring for what it holds)."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise TarballError(f"{root}: not a directory")
    buffer = io.BytesIO()
    total = files = 0
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, compresslevel=6) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in _walk(root):
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode) and not _inside(root, path):
                continue
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                continue  # sockets, fifos, devices: never part of a repository
            info = tar.gettarinfo(str(path), arcname=path.relative_to(root).as_posix())
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = 0
            info.mode = 0o755 if info.isdir() or (info.mode & 0o111) else 0o644
            files += 1
            total += info.size
            if files > max_files or total > max_unpacked_bytes:
                raise TarballError(f"{root}: more than {max_files} files or {max_unpacked_bytes / 2**20:.0f} MiB"
                                   " (KERNELEVO_QUEUE_UNPACK_MAX_FILES / _BYTES): is a data or build folder in"
                                   " the repository?")
            if info.isreg():
                with path.open("rb") as handle:
                    tar.addfile(info, handle)
            else:
                tar.addfile(info)
    return buffer.getvalue()


def unpack_repo(data: bytes, dest: Path, *, max_unpacked_bytes: int, max_files: int) -> Path:
    """Unpack a (hostile) repository tarball into the empty or new directory ``dest``; returns ``dest``
    (:func:`workflows.untar.unpack_tarball`: links become copies or are dropped, nothing escapes ``dest``)."""
    return unpack_tarball(io.BytesIO(data), dest, max_unpacked_bytes=max_unpacked_bytes, max_files=max_files)
