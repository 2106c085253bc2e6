"""Finding the task an op's search runs on, inside a checkout of the op's repository.

The GitHub App no longer runs searches itself: it submits jobs to the worker tier (``workflows``),
whose chunks call :func:`default_task_path` on the unpacked repository.
"""

from __future__ import annotations

from pathlib import Path


def default_task_path(workspace: Path, op_id: str, run_dir: Path) -> Path:
    """Path of a KernelBench-format task file for ``op_id`` inside a checkout.

    The op is found by static discovery of its file (no repository code is imported here); a task
    file is used as is, a decorated op is turned into a task module in ``run_dir`` (the search's
    ``Target.task_path`` rule).
    """
    from kernelevo.discovery import discover_source
    from kernelevo.search.targets import Target

    rel = op_id.partition("::")[0]
    source = (workspace / rel).resolve()
    if not source.is_relative_to(workspace.resolve()) or not source.is_file():
        raise FileNotFoundError(f"op {op_id!r}: {rel} is not a file in the checkout")
    ops, _ = discover_source(source.read_text(encoding="utf-8"), rel)
    found = [op for op in ops if op.op_id == op_id]
    if not found:
        raise LookupError(f"op {op_id!r} is not in {rel} at this commit (renamed or removed?)")
    return Target(found[0], workspace).task_path(run_dir)
