"""Local checkouts by commit SHA for discovery and jobs: the repo's tarball, unpacked safely.

``GET /repos/{owner}/{repo}/tarball/{sha}`` with the installation token; members are extracted
with the ``data`` filter (no absolute paths, links out of the tree, devices or setuid bits).
"""

from __future__ import annotations

import io
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

MAX_BYTES = 512 * 1024 * 1024


def tarball_workspace(api_url: str, token_for: Callable[[int], str], timeout_s: float = 60.0):
    """A workspace provider: ``provider(installation_id, repo, sha)`` is a context manager yielding the
    checkout (for static discovery and packing only: nothing in it is ever imported or run by the bot)."""

    @contextmanager
    def provider(installation_id: int, repo: str, sha: str) -> Iterator[Path]:
        response = requests.get(f"{api_url.rstrip('/')}/repos/{repo}/tarball/{sha}", timeout=timeout_s,
                                headers={"Authorization": f"token {token_for(installation_id)}",
                                         "Accept": "application/vnd.github+json"})
        response.raise_for_status()
        if len(response.content) > MAX_BYTES:
            raise ValueError(f"{repo}@{sha[:12]}: tarball larger than {MAX_BYTES >> 20} MiB")
        with tempfile.TemporaryDirectory(prefix="kernelevo-ws-") as tmp:
            yield extract(response.content, Path(tmp))

    return provider


def extract(data: bytes, dest: Path) -> Path:
    """Unpack a GitHub tarball (one top-level directory) under ``dest``; returns that directory."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
        tar.extractall(dest, filter="data")
    entries = [p for p in dest.iterdir()]
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else dest
