"""Where a candidate's module lives inside its sandbox: where the kernel will live in the user's repository.

A kernel that could tell it is being verified could be right there and wrong in the user's program. Its module's
path and its process's working folder are the first things it could look at, so inside the sandbox both are what
they are in a user's checkout under a home folder: ``$HOME/<repo>/kernels/<op>/kernel.py`` (the layout
:mod:`kernelevo.kernel_store` writes), the working folder ``$HOME/<repo>``, and the module is imported under the
name KernelEvo's dispatcher gives a stored kernel. ``HOME`` is the sandbox's neutral home (:mod:`evaluator.roles`);
the parent writes the file into the process's private folder, where that home is bound.

Pure: the repository and op names come from the task's text and path, reduced to safe path components.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from kernelevo import pyast
from kernelevo.kernel_store import KERNEL_MODULE, KERNELS_DIR, is_safe_op_id, kernel_module_name, op_name

_COMPONENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")


def _component(text: str, fallback: str) -> str:
    """``text`` as one safe path component (never ``.``/``..``, never a separator), else ``fallback``."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.")[:64]
    return cleaned if cleaned and _COMPONENT.fullmatch(cleaned) else fallback


@dataclass(frozen=True)
class CandidatePlace:
    """A candidate's module: ``relative`` under the sandbox's home, imported as ``module_name(home)``."""

    repo: str
    op: str

    @property
    def relative(self) -> PurePosixPath:
        return PurePosixPath(self.repo, KERNELS_DIR, self.op, KERNEL_MODULE)

    def host_path(self, private: Path) -> Path:
        """Where the parent writes the module: the process's private home (bound at its ``HOME``)."""
        return private / "home" / self.relative

    def module_name(self, home: Path) -> str:
        """The name the module is imported under (read from its file, which the parent wrote before the load)."""
        return kernel_module_name(self.op, (home / self.relative).read_text(encoding="utf-8"))

    def request(self) -> dict[str, str]:
        """What the candidate process is told (it checks it again: :func:`from_request`)."""
        return {"repo": self.repo, "op": self.op}


def from_request(value: object) -> CandidatePlace:
    """The place a load request names, validated (a malformed one is the parent's bug: ValueError)."""
    if not isinstance(value, dict):
        raise ValueError("no candidate module place in the request")
    repo, op = str(value.get("repo", "")), str(value.get("op", ""))
    if not (_COMPONENT.fullmatch(repo) and _COMPONENT.fullmatch(op)) or repo in (".", "..") or op in (".", ".."):
        raise ValueError(f"unsafe candidate module place {repo!r}/{op!r}")
    return CandidatePlace(repo=repo, op=op)


def place_for(task_path: Path, task_source: str) -> CandidatePlace:
    """The place for candidates of a task: a generated task's ``load_op('<repo root>', '<op id>')`` gives the
    repository's folder name and the op's kernel folder; a plain KernelBench file its folder and file name."""
    for root, op_id in load_op_calls(task_source):
        if op_id is not None and is_safe_op_id(op_id):
            return CandidatePlace(repo=_component(Path(root).name, "project"), op=_component(op_name(op_id), "op"))
    return CandidatePlace(repo=_component(task_path.resolve().parent.name, "project"),
                          op=_component(op_name(f"{task_path.name or 'task.py'}::Model"), "op"))


def load_op_calls(source: str) -> list[tuple[str, str | None]]:
    """The ``load_op('<repo root>', '<op id>')`` calls of a task's text (read, never run): each root, and its op id
    where that is a string too."""
    try:
        tree = pyast.parse(source)
    except (SyntaxError, ValueError):
        return []
    calls: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "load_op"
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            second = node.args[1] if len(node.args) > 1 else None
            op_id = second.value if isinstance(second, ast.Constant) and isinstance(second.value, str) else None
            calls.append((node.args[0].value, op_id))
    return calls
