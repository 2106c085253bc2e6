"""``kernelevo verify``: re-check every accepted kernel of a repository (the user's CI runs this).

A kernel fails when its op's source changed since it was verified (stale), when the op is gone, or
when the verifier rejects it now. Exit 0 when all pass, 1 on any failure, 2 when nothing could run.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from kernelevo.kernel_store import KernelStoreError, StoredKernel

if TYPE_CHECKING:
    from evaluator.verdict import Verdict


@dataclass
class VerifyResult:
    """The outcome for one stored kernel: ``status`` is ok, stale, missing_op, rejected or error."""

    name: str
    op_id: str
    status: str
    message: str
    verdict: Verdict | None = None  # None when the verifier did not run (stale, missing op, setup error)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict:
        return {"name": self.name, "op_id": self.op_id, "status": self.status, "message": self.message,
                "verdict": self.verdict.to_dict() if self.verdict is not None else None}


def check_staleness(stored: StoredKernel) -> VerifyResult | None:
    """A failing result when the op's current source hash differs from the manifest's (or the op is
    gone); None when the kernel still belongs to the op as it is now."""
    from kernelevo.op import source_hash, split_op_id

    rel_path, qualname = split_op_id(stored.op_id)
    file = stored.repo_root / rel_path
    if not file.is_file():
        return VerifyResult(stored.name, stored.op_id, "missing_op",
                            f"{rel_path} no longer exists; delete kernels/{stored.name} or restore the op")
    current = source_hash(file.read_text(encoding="utf-8"), None if stored.kind == "task" else qualname)
    if current is None:
        return VerifyResult(stored.name, stored.op_id, "missing_op",
                            f"{qualname} is no longer defined in {rel_path}; delete kernels/{stored.name}")
    if current != stored.source_hash:
        return VerifyResult(stored.name, stored.op_id, "stale",
                            f"{stored.op_id} changed since kernels/{stored.name} was verified; search again "
                            f"and replace it: {rerun_command(stored)} (or delete kernels/{stored.name})")
    return None


def rerun_command(stored: StoredKernel) -> str:
    """The local command that searches the op again and replaces its stored kernel (run from the repository)."""
    import shlex

    from kernelevo.op import split_op_id

    rel_path, qualname = split_op_id(stored.op_id)
    op = "" if stored.kind == "task" else f" --op {shlex.quote(qualname)}"
    return f"kernelevo optimize {shlex.quote(rel_path)}{op} --write-kernel"


def default_device() -> str:
    """``cuda`` when a GPU is usable, else ``cpu`` (Triton then runs in the interpreter)."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def verify_kernel(stored: StoredKernel, device: str | None = None, options=None) -> VerifyResult:
    """Check staleness, then re-run the verifier on the stored kernel against the op as it is now."""
    stale = check_staleness(stored)
    if stale is not None:
        return stale
    try:
        from evaluator import EvalSetupError, evaluate
    except ImportError as exc:
        return VerifyResult(stored.name, stored.op_id, "error", f"the evaluator is not available: {exc}")
    from kernelevo.op import split_op_id
    from kernelevo.op_task import write_task

    device = device or default_device()
    kwargs = {} if options is None else {"options": options}
    with tempfile.TemporaryDirectory(prefix="kernelevo-verify-") as tmp:
        if stored.kind == "task":
            task = stored.repo_root / split_op_id(stored.op_id)[0]
        else:
            task = write_task(stored.repo_root, stored.op_id, Path(tmp) / f"task_{stored.name}.py")
        try:
            verdict = evaluate(str(task), str(stored.kernel_path), device=device, **kwargs)
        except EvalSetupError as exc:
            return VerifyResult(stored.name, stored.op_id, "error", str(exc))
    if verdict.accepted:
        return VerifyResult(stored.name, stored.op_id, "ok", verdict.detail, verdict)
    return VerifyResult(stored.name, stored.op_id, "rejected", f"{verdict.reason.value}: {verdict.detail}", verdict)


def register(app: typer.Typer) -> None:
    """Add the ``verify`` command to the CLI."""
    app.command("verify")(verify_command)


def verify_command(
    path: Path = typer.Argument(Path("."), help="repository root (holding kernels/)"),
    device: str | None = typer.Option(None, "--device", help="cpu or cuda (default: cuda if available)"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object"),
) -> None:
    """Re-verify every kernel under PATH/kernels (or the one kernel directory PATH names); exit 1 on any
    stale, missing or rejected kernel, 2 when PATH or --device is wrong."""
    if device not in (None, "cpu", "cuda"):
        raise _fail(f"--device must be cpu or cuda, not {device!r}")
    kernels, errors = kernels_at(path)
    _check_config(path)
    results = [verify_kernel(k, device) for k in kernels]
    results += [VerifyResult("?", "?", "error", str(e)) for e in errors]
    if as_json:
        typer.echo(json.dumps({"ok": all(r.ok for r in results), "kernels": [r.to_dict() for r in results]},
                              indent=2, default=str))
    else:
        _print_table(path, results)
    if any(not r.ok for r in results):
        raise typer.Exit(1)


def _fail(message: str) -> typer.Exit:
    typer.echo(f"kernelevo verify: {message}", err=True)
    return typer.Exit(2)


def _check_config(path: Path) -> None:
    """An invalid ``.github/kernelevo.yml`` fails ``verify`` too (exit 2, every problem with its key and line):
    CI is where a broken config must show, before the bot meets it."""
    from kernelevo.repo_config import RepoConfigError, load_repo_config_for
    from kernelevo.search.targets import find_repo_root

    try:
        load_repo_config_for(find_repo_root(path))
    except RepoConfigError as exc:
        raise _fail(f"{exc}\nFix the file (docs/repo-config.md lists the keys), then run the command again.") \
            from None


def kernels_at(path: Path) -> tuple[list[StoredKernel], list[KernelStoreError]]:
    """The kernels PATH names: a repository root (its ``kernels/``), a ``kernels/`` folder, or one
    ``kernels/<op>/`` directory (the bot's reports suggest ``kernelevo verify kernels/<op>``). A PATH that
    does not exist or is a file is an error (typer.Exit 2): a typo in CI must not pass as "nothing to verify"."""
    from kernelevo.kernel_store import KERNELS_DIR, MANIFEST, find_kernels_with_errors, read_kernel

    if not path.exists():
        raise _fail(f"{path}: no such directory; give the repository root (the folder holding kernels/) "
                    "or one kernels/<op>/ directory")
    if not path.is_dir():
        raise _fail(f"{path} is a file; give the repository root (the folder holding kernels/) "
                    "or one kernels/<op>/ directory")
    if (path / MANIFEST).is_file():
        try:
            return [read_kernel(path)], []
        except KernelStoreError as exc:
            return [], [exc]
    if path.name == KERNELS_DIR and not (path / KERNELS_DIR).is_dir():
        return find_kernels_with_errors(path.parent)
    return find_kernels_with_errors(path)


def _print_table(path: Path, results: list[VerifyResult]) -> None:
    from rich.console import Console
    from rich.table import Table

    if not results:  # plain text: rich would wrap the path
        typer.echo(f"no kernels under {path / 'kernels'}: nothing to verify (kernels are stored there by "
                   "`kernelevo optimize --write-kernel` or the bot)")
        return
    console = Console()
    table = Table("kernel", "op", "status", "detail", title="kernelevo verify")
    for r in results:
        colour = "green" if r.ok else "red"
        table.add_row(r.name, r.op_id, f"[{colour}]{r.status}[/{colour}]", r.message)
    console.print(table)
