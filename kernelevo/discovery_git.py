"""Discovery at git revisions: which ops a pull request added, changed or removed.

The I/O edge of :mod:`kernelevo.discovery`: blobs are read with one ``git cat-file --batch`` process and
handed to the same pure parser that scans a working tree.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from kernelevo.discovery import (
    DiscoveryError,
    DiscoveryResult,
    OpDiff,
    add_source_file,
    diff_ops,
    discover,
    is_selected,
)


class GitError(RuntimeError):
    """A git command failed (unknown revision, not a repository); the message says which and why."""


def _git(repo: Path, *args: str) -> bytes:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True)
    if proc.returncode != 0:
        reason = proc.stderr.decode(errors="replace").strip()
        raise GitError(f"git {' '.join(args)} failed in {repo}: {reason}")
    return proc.stdout


def read_blobs(repo: Path, rev: str, paths: list[str]) -> dict[str, bytes]:
    """Contents of ``paths`` at ``rev`` (missing files omitted), through one ``git cat-file --batch``."""
    if not paths:
        return {}
    request = "".join(f"{rev}:{p}\n" for p in paths).encode()
    out = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch"], input=request,
                         capture_output=True, check=True).stdout
    blobs, pos = {}, 0
    for path in paths:
        header_end = out.index(b"\n", pos)
        header = out[pos:header_end].split()
        pos = header_end + 1
        if header[-1] == b"missing" or len(header) < 3:
            continue
        size = int(header[2])
        if header[1] == b"blob":
            blobs[path] = out[pos:pos + size]
        pos += size + 1
    return blobs


def discover_at_rev(repo: Path | str, rev: str, paths: list[str] | None = None) -> DiscoveryResult:
    """Ops at git revision ``rev`` (all files, or only ``paths``), using that revision's config."""
    repo = Path(repo)
    _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    from kernelevo.repo_config import CONFIG_PATH, load_repo_config

    config_blob = read_blobs(repo, rev, [CONFIG_PATH]).get(CONFIG_PATH)
    config = load_repo_config(config_blob.decode("utf-8") if config_blob is not None else "")
    if paths is None:
        paths = _git(repo, "ls-tree", "-r", "--name-only", "-z", rev).decode().split("\0")
    selected = [p for p in paths if p and is_selected(p, config.paths.include, config.paths.exclude)]
    result = DiscoveryResult()
    for rel, data in read_blobs(repo, rev, selected).items():
        add_source_file(result, rel, data)
    return result


def changed_files(repo: Path | str, base: str, head: str) -> list[str]:
    """Paths that differ between two revisions (both sides of a rename are listed)."""
    out = _git(Path(repo), "diff", "--name-only", "--no-renames", "-z", base, head).decode()
    return [p for p in out.split("\0") if p]


def diff_revisions(repo: Path | str, base: str, head: str) -> tuple[OpDiff, list[DiscoveryError]]:
    """Ops added/changed/removed from ``base`` to ``head``: only files git reports as changed are
    parsed (ops in unchanged files cannot have changed), so this is fast on large repositories."""
    files = changed_files(repo, base, head)
    before = discover_at_rev(repo, base, files)
    after = discover_at_rev(repo, head, files)
    return diff_ops(before.hashes(), after.hashes()), after.errors


def diff_worktree(root: Path | str, files: list[str], base: str | None = "HEAD") -> tuple[OpDiff, list]:
    """Ops in ``files`` of the working tree compared with the same files at ``base`` (all ops count
    as added when ``base`` is None, e.g. outside a git repository)."""
    after = discover(root, files=files)
    before = discover_at_rev(root, base, files).hashes() if base is not None else {}
    return diff_ops(before, after.hashes()), after.errors
