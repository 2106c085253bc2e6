"""What a candidate's process built, kept for that candidate's later processes (the same source only).

Two kinds are kept, each from where the process wrote it in its private folder:

- ``load_inline``'s extensions (``torch_extensions/``): the candidate's own host code, compiled (30-60 s a source).
- Triton's compiled kernels (``home/.triton/cache/``, Triton's default cache under the sandbox's HOME): device code
  and its metadata only. Triton also caches host launchers it compiles beside them (shared objects a process
  loads); those are never kept: native code made in one candidate process reaches another only where the
  candidate's source is native code already (load_inline). A kept kernel runs on the GPU, and every output of the
  process that loads it is judged as any other.

Triton finds a kernel's files through a group file naming them by absolute path, under the HOME of the process that
compiled them; each process has a HOME of its own (a drawn account), so the group files are rewritten for the
process they are staged for. Only regular files are copied (no links, no special files). Pure file operations: the
caller decides when (after the process that built them is dead; before the next one loads).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

TRITON_CACHE = Path("home/.triton/cache")
TRITON_KERNEL_SUFFIXES = frozenset({".cubin", ".ptx", ".json", ".ttir", ".ttgir", ".llir", ".source", ".hsaco",
                                    ".amdgcn"})
GROUP_PREFIX = "__grp__"


@dataclass(frozen=True)
class BuildKind:
    name: str  # its folder among the kept builds
    inside: Path  # where a process writes it, relative to its private folder
    suffixes: frozenset[str] | None = None  # the files kept (None: every regular file)


KINDS = (BuildKind("torch_extensions", Path("torch_extensions")),
         BuildKind("triton", TRITON_CACHE, TRITON_KERNEL_SUFFIXES))


def keep(private: Path, kept: Path) -> None:
    """Copy what the process with folder ``private`` built into ``kept``, each kind the first time only."""
    for kind in KINDS:
        built, target = private / kind.inside, kept / kind.name
        if built.is_symlink() or not built.is_dir() or target.exists():
            continue
        partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
        try:
            shutil.copytree(built, partial, symlinks=True, ignore=_ignored(kind.suffixes))
            partial.replace(target)
        except OSError:
            shutil.rmtree(partial, ignore_errors=True)


def stage(kept: Path, private: Path, home: Path | None) -> None:
    """Copy the kept builds into the private folder of a process that has not loaded the candidate yet; ``home``:
    where that process sees its private ``home/`` (Triton's kernels are skipped without it)."""
    for kind in KINDS:
        source = kept / kind.name
        if not source.is_dir() or (kind.inside.parts[0] == "home" and home is None):
            continue
        target = private / kind.inside
        shutil.copytree(source, target, dirs_exist_ok=True, symlinks=False)
        if kind.inside == TRITON_CACHE and home is not None:
            _rehome_groups(target, home / TRITON_CACHE.relative_to("home"))


def _rehome_groups(cache: Path, seen_as: Path) -> None:
    """Point each group file's entries at ``seen_as/<key>/<file>``, where the staged copy is in the new process's
    view; an entry naming no file of its own key's folder is dropped with its group (Triton then compiles again)."""
    for group in cache.glob(f"*/{GROUP_PREFIX}*"):
        try:
            data = json.loads(group.read_text())
            paths = data["child_paths"]
            rehomed = {}
            for child, path in paths.items():
                name = Path(str(path)).name
                if name != child or not (group.parent / name).is_file():
                    raise ValueError(child)
                rehomed[child] = str(seen_as / group.parent.name / name)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            group.unlink(missing_ok=True)
            continue
        group.write_text(json.dumps({"child_paths": rehomed}))


def _ignored(suffixes: frozenset[str] | None):  # type: ignore[no-untyped-def]
    def ignore(folder: str, names: list[str]) -> list[str]:
        """copytree ignore: links and special files never leave a candidate's folder; nor, for a kind with
        ``suffixes``, any file of another suffix (group files are JSON)."""
        dropped = []
        for name in names:
            path = Path(folder) / name
            if path.is_symlink() or not (path.is_dir() or path.is_file()):
                dropped.append(name)
            elif suffixes is not None and path.is_file() and path.suffix not in suffixes:
                dropped.append(name)
        return dropped

    return ignore
