"""``kernelevo discover``: list the ops of a repository (statically), or which ops a change touched."""

from __future__ import annotations

import json
from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    """Add the ``discover`` command to the CLI."""
    app.command("discover")(discover_command)


def discover_command(
    path: Path = typer.Argument(Path("."), help="repository (or directory) to scan"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object"),
    base: str | None = typer.Option(None, "--base", help="git revision to diff from"),
    head: str | None = typer.Option(None, "--head", help="git revision to diff to (with --base)"),
    changed: list[str] | None = typer.Option(
        None, "--changed", help="changed file (relative to PATH; repeatable): diff it against --base or HEAD"
    ),
) -> None:
    """List annotated ops and KernelBench task files without importing any repository code.

    With --base/--head (or --changed), report the ops added, changed and removed instead.
    Files that do not parse are reported and skipped, and the exit status is 1 (their ops may be missing);
    a FILE with no op is exit 1 too. Exit 2 on a PATH that does not exist, a bad config or git revision.
    """
    from kernelevo import discovery, discovery_git
    from kernelevo.repo_config import RepoConfigError

    if not path.exists():
        _fail(f"{path}: no such file or directory; give the repository (or a folder or .py file in it) to scan")
    if path.is_file():
        if base is not None or changed:
            _fail(f"{path} is a file: --base and --changed compare a repository; give its folder as PATH")
        _discover_file(path, as_json)
        return
    if head is not None and base is None:
        _fail("--head needs --base (the revision to compare with)")
    if changed and head is not None:
        _fail("use either --base/--head (two revisions) or --changed (working tree files), not both")
    try:
        if changed:
            diff_base = base if base is not None else ("HEAD" if _is_git(path) else None)
            diff, errors = discovery_git.diff_worktree(path, list(changed), diff_base)
            _print_diff(diff, errors, as_json)
            _exit_on_errors(errors)
            return
        if base is not None:
            diff, errors = discovery_git.diff_revisions(path, base, head or "HEAD")
            _print_diff(diff, errors, as_json)
            _exit_on_errors(errors)
            return
        result = discovery.discover(path)
    except (RepoConfigError, discovery_git.GitError) as exc:
        _fail(str(exc))
    _print_ops(result, as_json)
    if not result.ops and not result.errors and not as_json:
        typer.echo(f"no ops under {path}: mark one with @kernelevo.optimize(...) or add a KernelBench task file")
    _exit_on_errors(result.errors)


def _discover_file(path: Path, as_json: bool) -> None:
    """One named file: its ops, with ids relative to its repository (as ``optimize FILE`` sees them)."""
    from kernelevo import discovery
    from kernelevo.search.targets import find_repo_root

    root = find_repo_root(path)
    result = discovery.discover(root, ["**/*.py", "*.py"], [], files=[path.resolve().relative_to(root).as_posix()])
    _print_ops(result, as_json)
    _exit_on_errors(result.errors)
    if not result.ops:
        typer.echo(f"kernelevo discover: {path}: no ops found. Mark one with @kernelevo.optimize(...) or give a "
                   "KernelBench task file (class Model, get_inputs, get_init_inputs)", err=True)
        raise typer.Exit(1)


def _exit_on_errors(errors: list) -> None:
    if errors:
        typer.echo(f"kernelevo discover: {len(errors)} file(s) could not be scanned (listed above); fix them, "
                   "or exclude them in .github/kernelevo.yml (paths.exclude)", err=True)
        raise typer.Exit(1)


def _is_git(path: Path) -> bool:
    import subprocess

    proc = subprocess.run(["git", "-C", str(path), "rev-parse", "--verify", "--quiet", "HEAD"],
                          capture_output=True)
    return proc.returncode == 0


def _fail(message: str) -> None:
    typer.echo(f"kernelevo discover: {message}", err=True)
    raise typer.Exit(2)


def _print_ops(result, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps({"ops": [op.to_dict() for op in result.ops],
                               "errors": [e.to_dict() for e in result.errors],
                               "files_scanned": result.files_scanned}, indent=2))
        return
    from rich.console import Console
    from rich.table import Column, Table

    console = Console()
    table = Table("kind", "cases", "small", "source hash", title=f"{len(result.ops)} op(s)")
    table.columns.insert(0, Column("op", overflow="fold"))
    for op in result.ops:
        table.add_row(op.op_id, op.kind, _count(op.cases), _count(op.small_cases), op.source_hash[7:19])
    console.print(table)
    for error in result.errors:
        console.print(f"[yellow]skipped[/yellow] {error}", highlight=False)


def _count(value: int | None) -> str:
    return "?" if value is None else str(value)


def _print_diff(diff, errors, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps({**diff.to_dict(), "errors": [e.to_dict() for e in errors]}, indent=2))
        return
    for label, ids in (("added", diff.added), ("changed", diff.changed), ("removed", diff.removed)):
        for identifier in ids:
            typer.echo(f"{label:8} {identifier}")
    if not (diff.added or diff.changed or diff.removed):
        typer.echo("no ops added, changed or removed")
    for error in errors:
        typer.echo(f"skipped  {error}")
