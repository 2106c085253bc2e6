"""What ``kernelevo optimize PATH`` searches: ops found statically in a file or repository.

A KernelBench task file is its own task; a decorated op gets a generated task module (written by
:mod:`kernelevo.op_task` into the run directory, so a run is self-contained). Nothing here imports
user code: discovery is AST-only, and the generated task imports the op inside the evaluator's
sandboxed worker. After the search, an accepted kernel can be written into the repository layout
(``kernels/<op-name>/``) through :mod:`kernelevo.kernel_store`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from evaluator.verdict import TensorSpec, Verdict
from kernelevo.discovery import DiscoveredOp, discover


class TargetError(ValueError):
    """PATH or --op does not name an op that can be searched; the message says what to do."""


@dataclass(frozen=True)
class Target:
    """One op to search, with the repository it belongs to."""

    op: DiscoveredOp
    repo_root: Path

    @property
    def op_id(self) -> str:
        return self.op.op_id

    def task_path(self, run_dir: Path) -> Path:
        """The KernelBench task for this op: the file itself, or a module generated into ``run_dir``."""
        if self.op.kind == "task":
            return self.repo_root / self.op.path
        from kernelevo.op_task import write_task

        return write_task(self.repo_root, self.op_id, Path(run_dir) / "task.py")


def find_repo_root(path: Path) -> Path:
    """The nearest directory above ``path`` holding ``.git`` or ``.github/kernelevo.yml``, else its folder."""
    start = path.resolve() if path.is_dir() else path.resolve().parent
    for directory in (start, *start.parents):
        if (directory / ".git").exists() or (directory / ".github" / "kernelevo.yml").is_file():
            return directory
    return start


def _matches(op: DiscoveredOp, wanted: str) -> bool:
    from kernelevo.kernel_store import op_name

    return wanted in (op.op_id, op.qualname, op_name(op.op_id)) or op.op_id.endswith("/" + wanted)


def resolve_targets(path: Path, op: str | None = None) -> list[Target]:
    """The ops under ``path`` (a file or a directory), or only the one ``op`` names (id, qualname or name)."""
    path = Path(path)
    if not path.exists():
        raise TargetError(f"{path}: no such file or directory")
    root = find_repo_root(path)
    if path.is_file():
        rel = path.resolve().relative_to(root).as_posix()
        found = discover(root, ["**/*.py", "*.py"], [], files=[rel])
    else:
        found = discover(root)
        prefix = path.resolve().relative_to(root).as_posix()
        if prefix != ".":
            found.ops = [o for o in found.ops if o.path.startswith(prefix.rstrip("/") + "/")]
    ops = found.ops
    if not ops:
        problems = "; ".join(str(e) for e in found.errors[:3])
        raise TargetError(
            f"{path}: no ops found. Mark one with @kernelevo.optimize(...) or give a KernelBench task file"
            f" (class Model, get_inputs, get_init_inputs)." + (f" Problems: {problems}" if problems else "")
        )
    if op is not None:
        ops = [o for o in ops if _matches(o, op)]
        if not ops:
            known = ", ".join(o.op_id for o in found.ops[:10])
            raise TargetError(f"{path}: no op named {op!r}; ops found: {known}")
    return [Target(o, root) for o in ops]


def task_in_checkout(workspace: Path, op_id: str, run_dir: Path) -> Path:
    """Path of a KernelBench-format task file for ``op_id`` inside an unpacked checkout (a worker's chunk).

    The op is found by static discovery of its file (no repository code is imported here); a task file
    is used as is, a decorated op is turned into a task module in ``run_dir`` (``Target.task_path``).
    """
    from kernelevo.discovery import discover_source

    rel = op_id.partition("::")[0]
    source = (workspace / rel).resolve()
    if not source.is_relative_to(workspace.resolve()) or not source.is_file():
        raise FileNotFoundError(f"op {op_id!r}: {rel} is not a file in the checkout")
    ops, _ = discover_source(source.read_text(encoding="utf-8"), rel)
    found = [op for op in ops if op.op_id == op_id]
    if not found:
        raise LookupError(f"op {op_id!r} is not in {rel} at this commit (renamed or removed?)")
    return Target(found[0], workspace).task_path(run_dir)


def envelope_from_verdict(verdict: Verdict | Mapping[str, Any], device: str) -> dict[str, Any]:
    """The dispatch envelope covering the cases the verdict checked (shapes, dtypes, scalar values)."""
    from kernelevo.kernel_store import envelope_from_cases

    v = Verdict.coerce(verdict)
    if v is None:
        raise ValueError("envelope_from_verdict: no verdict was given (the envelope is the cases a verdict checked)")
    def value(item: Any) -> Any:
        if isinstance(item, TensorSpec):
            return SimpleNamespace(shape=tuple(item.shape), dtype=item.dtype,
                                   is_contiguous=lambda flag=item.contiguous: flag)
        return item.value

    cases = [tuple(value(item) for item in case.inputs) for case in (v.correctness.cases if v.correctness else [])]
    init = [value(item) for item in v.correctness.init_inputs] if v.correctness else []
    env = v.environment
    capability = env.capability_tuple
    capabilities = [list(capability)] if device == "cuda" and capability else None
    versions = {k: value for k, value in (("torch", env.torch), ("triton", env.triton)) if value}
    return envelope_from_cases(cases, device_type=device, capabilities=capabilities, backend=v.backend,
                               versions=versions, init=init or None)

