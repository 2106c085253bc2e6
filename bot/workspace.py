"""Local checkouts by commit SHA for discovery and packing: the repo's tarball, unpacked safely.

``GET /repos/{owner}/{repo}/tarball/{sha}`` with a read-only token for that one repository, streamed to
disk under a cap on the download. The tarball is hostile: it is unpacked by :mod:`workflows.untar` (the
workers' extraction too): no symlink or hard link reaches the disk (a link to a file of the tarball becomes a
copy, other links are dropped), absolute paths, ``..``, links out of the tree and devices are refused, and the
unpacked size and file count are capped from the headers, so a small tarball cannot fill the disk.
Checkouts live in this process's own folder under ``root``; the folder is removed on every exit path, and the
folders of dead processes (a ``kill -9``) are removed when the next provider is created.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import requests

from bot.auth import READ
from workflows.untar import TarballError, unpack_tarball

MAX_BYTES = 512 * 1024 * 1024  # the compressed download
CHUNK = 1 << 16
TokenFor = Callable[[int, str, Mapping[str, str]], str]


class CheckoutError(ValueError):
    """A checkout that is too large or unsafe to unpack: names the repository, commit and cap."""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_dead(root: Path) -> list[Path]:
    """Remove the checkout folders (``<pid>``) of processes that no longer run; returns them."""
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    for entry in root.iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid() and not _pid_alive(int(entry.name)):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def tarball_workspace(api_url: str, token_for: TokenFor, timeout_s: float = 60.0, *,
                      max_unpacked_bytes: int = 512 * 2**20, max_files: int = 50_000,
                      max_download_bytes: int = MAX_BYTES, root: Path | None = None
                      ) -> Callable[[int, str, str], AbstractContextManager[Path]]:
    """A workspace provider: ``provider(installation_id, repo, sha)`` is a context manager yielding the
    checkout (for static discovery and packing only: nothing in it is ever imported or run by the bot)."""
    base = Path(root or tempfile.gettempdir()) / "kernelevo-checkouts"
    base.mkdir(parents=True, exist_ok=True)
    sweep_dead(base)
    mine = base / str(os.getpid())

    @contextmanager
    def provider(installation_id: int, repo: str, sha: str) -> Iterator[Path]:
        mine.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="ws-", dir=mine) as tmp:
            archive = Path(tmp) / "repo.tar.gz"
            download(f"{api_url.rstrip('/')}/repos/{repo}/tarball/{sha}", archive,
                     token=token_for(installation_id, repo, READ), timeout_s=timeout_s, limit=max_download_bytes,
                     what=f"{repo}@{sha[:12]}")
            try:
                checkout = extract_file(archive, Path(tmp) / "tree", max_unpacked_bytes=max_unpacked_bytes,
                                        max_files=max_files)
            except CheckoutError as exc:
                raise CheckoutError(f"{repo}@{sha[:12]}: {exc}") from None
            archive.unlink()
            yield checkout

    return provider


def download(url: str, dest: Path, *, token: str, timeout_s: float, limit: int, what: str) -> None:
    """Stream ``url`` into ``dest``, stopping as soon as more than ``limit`` bytes arrived."""
    headers = {"Authorization": f"token {token}", "Accept": "application/vnd.github+json"}
    with requests.get(url, timeout=timeout_s, headers=headers, stream=True) as response:
        response.raise_for_status()
        size = 0
        with dest.open("wb") as handle:
            for chunk in response.iter_content(CHUNK):
                size += len(chunk)
                if size > limit:
                    raise CheckoutError(f"{what}: tarball larger than {limit >> 20} MiB")
                handle.write(chunk)


def extract_file(archive: Path, dest: Path, *, max_unpacked_bytes: int = 512 * 2**20,
                 max_files: int = 50_000) -> Path:
    """Unpack a GitHub tarball (one top-level directory) under ``dest`` with
    :func:`workflows.untar.unpack_tarball`; returns that directory. Raises :class:`CheckoutError` for an
    unsafe member or past the caps (what was unpacked stays under ``dest``, which the caller removes)."""
    try:
        with archive.open("rb") as handle:
            unpack_tarball(handle, dest, max_unpacked_bytes=max_unpacked_bytes, max_files=max_files)
    except TarballError as exc:
        raise CheckoutError(str(exc)) from None
    entries = list(dest.iterdir())
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else dest


def extract(data: bytes, dest: Path, *, max_unpacked_bytes: int = 512 * 2**20, max_files: int = 50_000) -> Path:
    """:func:`extract_file` for a tarball held in memory (tests, small archives)."""
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=dest.parent, suffix=".tar.gz") as handle:
        handle.write(data)
        handle.flush()
        return extract_file(Path(handle.name), dest, max_unpacked_bytes=max_unpacked_bytes, max_files=max_files)
