"""What a candidate's process built, kept for that candidate's later processes (the same source only).

Triton's compiled kernels are kept (``home/.triton/cache/``, Triton's default cache under the sandbox's HOME): device
code and its metadata only. Triton also caches host launchers it compiles beside them (shared objects a process
loads); those are never kept: native code made in one candidate process reaches another only where the candidate's
source is native code already. A kept kernel runs on the GPU, and every output of the process that loads it is
judged as any other.

``load_inline`` extensions are not kept: their build (ninja's log and rules) names the absolute folder it was made
in, each process has folders of its own, and a build moved elsewhere is made again. A ``load_inline`` candidate's
plain process builds its own copy while the guarded process builds (:func:`evaluator.plain_run.start_load`).

Triton finds a kernel's files through a group file naming them by absolute path, under the HOME of the process that
compiled them; each process has a HOME of its own (a drawn account), so the group files are rewritten for the
process they are staged for. Only regular files are copied (no links, no special files). Pure file operations: the
caller decides when (after the process that built them is dead; before the next one loads).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

TRITON_CACHE = Path("home/.triton/cache")
TRITON_KERNEL_SUFFIXES = frozenset({".cubin", ".ptx", ".json", ".ttir", ".ttgir", ".llir", ".source", ".hsaco",
                                    ".amdgcn"})
GROUP_PREFIX = "__grp__"


KEPT = "triton"  # the kept kernels' folder among a source's kept builds


def keep(private: Path, kept: Path) -> None:
    """Copy the Triton kernels the process with folder ``private`` compiled into ``kept``, the first time only."""
    built, target = private / TRITON_CACHE, kept / KEPT
    if built.is_symlink() or not built.is_dir() or target.exists():
        return
    partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
    try:
        shutil.copytree(built, partial, symlinks=True, ignore=_kernel_files_only)
        partial.replace(target)
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)


def stage(kept: Path, private: Path, home: Path | None) -> None:
    """Copy the kept kernels into the private folder of a process that has not loaded the candidate yet; ``home``:
    where that process sees its private ``home/`` (nothing is staged without it). Everything written is read from
    the kept copy (the parent's), never back from the process's folder."""
    source = kept / KEPT
    if not source.is_dir() or home is None:
        return
    target = private / TRITON_CACHE
    shutil.copytree(source, target, dirs_exist_ok=True, symlinks=False, ignore=_groups)
    _stage_groups(source, target, home / TRITON_CACHE.relative_to("home"))


def _groups(folder: str, names: list[str]) -> list[str]:
    return [name for name in names if name.startswith(GROUP_PREFIX)]


def _stage_groups(kept: Path, target: Path, seen_as: Path) -> None:
    """Each kept group file, its entries pointed at ``seen_as/<key>/<file>`` (where the staged copy is in the new
    process's view), written into ``target``; a group naming a file its key's folder does not hold is left out
    (Triton then compiles again: a miss, never another file)."""
    for group in kept.glob(f"*/{GROUP_PREFIX}*"):
        try:
            paths = json.loads(group.read_text())["child_paths"]
            rehomed = {}
            for child, path in paths.items():
                name = Path(str(path)).name
                if name != child or not (group.parent / name).is_file():
                    raise ValueError(child)
                rehomed[child] = str(seen_as / group.parent.name / name)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        folder = target / group.parent.name
        if not folder.is_dir() or folder.is_symlink():
            continue
        try:
            fd = os.open(folder / group.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o644)
        except FileExistsError:  # the process's own, from an earlier compile: Triton reads that one
            continue
        with os.fdopen(fd, "w") as out:
            out.write(json.dumps({"child_paths": rehomed}))


def _kernel_files_only(folder: str, names: list[str]) -> list[str]:
    """copytree ignore: links and special files never leave a candidate's folder, nor any file but a kernel's
    (group files are JSON)."""
    dropped = []
    for name in names:
        path = Path(folder) / name
        if path.is_symlink() or not (path.is_dir() or path.is_file()):
            dropped.append(name)
        elif path.is_file() and path.suffix not in TRITON_KERNEL_SUFFIXES:
            dropped.append(name)
    return dropped
