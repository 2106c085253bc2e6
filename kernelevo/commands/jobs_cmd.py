"""``kernelevo jobs``: submit searches to the worker tier and follow them (``submit``, ``show``, ``list``, ``cancel``,
``run``: a job's run directory, for ``kernelevo report``).

Every subcommand reads the Redis URL from ``KERNELEVO_REDIS_URL`` and fails at once, with exit status 3,
when Redis cannot be reached. Bad arguments exit with 2 before anything is sent; an unknown job id
exits with 1. ``kernelevo optimize`` stays the way to search in-process without Redis.
"""

from __future__ import annotations

import getpass
import json
import re
from pathlib import Path
from typing import Any

import typer

EXIT_NOT_FOUND, EXIT_USAGE, EXIT_NO_REDIS = 1, 2, 3

_BUDGET_FLAGS = {"candidates": "--budget-candidates", "minutes": "--budget-minutes", "tokens": "--budget-tokens",
                 "usd": "--budget-usd", "plateau_generations": "--plateau", "generation_size": "--generation-size",
                 "parallel_evaluations": "--parallel-evaluations", "device": "--device", "proposer": "--proposer",
                 "seed": "--seed"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def register(app: typer.Typer) -> None:
    """Add the ``jobs`` command group to the CLI."""
    jobs = typer.Typer(name="jobs", help="Submit search jobs to the Celery workers and follow them (needs Redis).",
                       no_args_is_help=True)
    jobs.command("submit")(submit_command)
    jobs.command("show")(show_command)
    jobs.command("list")(list_command)
    jobs.command("cancel")(cancel_command)
    jobs.command("run")(run_command)
    app.add_typer(jobs, name="jobs")


def _fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    typer.echo(f"kernelevo jobs: {message}", err=True)
    return typer.Exit(code)


def _safe(text: Any) -> str:
    """Text for the terminal: control characters (escape sequences from a hostile op name) made visible."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def _client() -> Any:
    from kernelevo.settings import get_settings
    from workflows.client import JobsClient
    from workflows.redis_conn import QueueUnavailable

    try:
        return JobsClient.from_settings(get_settings(), redis_retry_s=0)
    except QueueUnavailable as exc:
        raise _fail(str(exc), EXIT_NO_REDIS) from None


def _validation_message(exc: Any) -> str:
    parts = []
    for error in exc.errors():
        field = str(error["loc"][-1]) if error.get("loc") else "?"
        parts.append(f"{_BUDGET_FLAGS.get(field, field)}: {error['msg'].lower()} (got {error.get('input')!r})")
    return "; ".join(parts)


INTERNAL = {"last_write"}  # the store's bookkeeping, not part of what a job is


def _data(record: Any, exclude: set[str] = INTERNAL) -> dict[str, Any]:
    return record.model_dump(mode="json", exclude=exclude)


def describe(record: Any) -> list[str]:
    """The human-readable lines of ``jobs show``."""
    spec, progress = record.spec, record.progress
    lines = [
        f"{record.id}: {record.state.value}",
        f"  op        {_safe(spec.op_id)} ({_safe(spec.repo)} @ {spec.commit_sha[:12]}, {spec.device}, {spec.backend})",
        f"  budgets   {_safe(spec.budgets.model_dump(exclude_none=True))}",
        f"  progress  generation {progress.generation}, {progress.evaluated} evaluated, {progress.accepted} accepted,"
        f" best fitness {progress.best_fitness:g}",
        f"  chunks    {record.chunks} (epoch {record.epoch}, {record.recoveries} recovered)",
    ]
    if record.owner:
        lines.append(f"  running   on {_safe(record.owner)} pid {record.owner_pid}")
    if record.waiting_for:
        lines.append(f"  waiting   for {record.waiting_for} (the same op of the same repository)")
    if record.cancel_requested and not record.state.terminal:
        lines.append("  cancel    requested; stops at the next candidate")
    if record.result is not None:
        lines.append(f"  result    {record.result.stop_reason}, best fitness {record.result.best_fitness:g}")
    if record.error:
        lines.append(f"  error     {_safe(record.error)}")
    return lines


def submit_command(
    path: Path = typer.Argument(..., help="a KernelBench task file, or a file/folder with decorated ops"),
    op: str | None = typer.Option(None, "--op", help="the op to search (id, qualname or kernel name)"),
    device: str = typer.Option("cuda", "--device", help="cuda (the gpu queue) or cpu (the cpu queue)"),
    backend: str = typer.Option("triton", "--backend", help="triton, cuda or any"),
    proposer: str = typer.Option("auto", "--proposer", help="auto, offline or llm (chosen on the worker)"),
    model: str | None = typer.Option(None, "--model", help="LLM model for the llm proposer"),
    budget_candidates: int | None = typer.Option(None, "--budget-candidates", help="candidates to evaluate [32]"),
    budget_minutes: float | None = typer.Option(None, "--budget-minutes", help="search time (not queue time)"),
    budget_tokens: int | None = typer.Option(None, "--budget-tokens", help="proposer tokens (in + out)"),
    budget_usd: float | None = typer.Option(None, "--budget-usd", help="proposer money"),
    plateau: int | None = typer.Option(None, "--plateau", help="stop after N generations without improvement"
                                       " [6; 2 on cpu]"),
    seed: int = typer.Option(0, "--seed", help="random seed of the search"),
    generation_size: int | None = typer.Option(None, "--generation-size", help="candidates per generation [8]"),
    parallel_evaluations: int | None = typer.Option(None, "--parallel-evaluations",
                                                    help="candidates judged at once [3 on cuda, 1 on cpu]"),
    json_out: bool = typer.Option(False, "--json", help="print the job record as JSON"),
) -> None:
    """Queue a search of one op; the repository around PATH travels with the job as a tarball."""
    from pydantic import ValidationError

    from kernelevo.search.budget import CPU_PLATEAU_GENERATIONS
    from kernelevo.search.targets import TargetError, resolve_targets
    from kernelevo.settings import get_settings
    from workflows.models import Budgets, JobSpec, Origin, OriginKind, SearchShape
    from workflows.repo_tarball import pack_repo
    from workflows.store import BlobError
    from workflows.untar import TarballError

    if backend not in ("triton", "cuda", "any"):
        raise _fail(f"--backend must be triton, cuda or any, not {backend!r}")
    if device not in ("cpu", "cuda"):
        raise _fail(f"--device must be cpu or cuda, not {device!r}")
    if proposer not in ("auto", "offline", "llm"):  # workers build proposers by name only, never by import path
        raise _fail(f"--proposer must be auto, offline or llm, not {proposer!r}")
    if device == "cpu" and plateau is None:
        plateau = CPU_PLATEAU_GENERATIONS
    given = dict(candidates=budget_candidates, minutes=budget_minutes, tokens=budget_tokens, usd=budget_usd,
                 plateau_generations=plateau)
    try:
        budgets = Budgets.model_validate({k: v for k, v in given.items() if v is not None})
        shape = SearchShape(generation_size=generation_size, parallel_evaluations=parallel_evaluations)
    except ValidationError as exc:
        raise _fail(_validation_message(exc)) from None
    try:
        targets = resolve_targets(path, op)
    except TargetError as exc:
        raise _fail(str(exc)) from None
    if len(targets) > 1:
        names = ", ".join(_safe(t.op_id) for t in targets[:10])
        raise _fail(f"{path}: {len(targets)} ops found ({names}); choose one with --op (one job per op)")
    target = targets[0]
    settings = get_settings()
    try:
        tarball = pack_repo(target.repo_root, max_unpacked_bytes=settings.queue_unpack_max_bytes,
                            max_files=settings.queue_unpack_max_files)
    except TarballError as exc:
        raise _fail(str(exc)) from None
    client = _client()
    try:
        source = client.upload_repo(tarball)
    except BlobError as exc:
        raise _fail(str(exc)) from None
    label = re.sub(r"[^A-Za-z0-9_.-]+", "_", target.repo_root.name).strip("._") or "repo"
    try:
        spec = JobSpec(repo=f"local/{label}", commit_sha=source.sha256, op_id=target.op_id, source=source,
                       device=device, backend=backend, proposer=proposer, model=model, budgets=budgets, shape=shape,
                       seed=seed, origin=Origin(kind=OriginKind.CLI, requested_by=getpass.getuser()))
    except ValidationError as exc:
        raise _fail(_validation_message(exc)) from None
    outcome = client.submit(spec)
    if json_out:
        typer.echo(json.dumps({"created": outcome.created, "job": _data(outcome.record)}, indent=2))
    else:
        typer.echo(outcome.record.id)
        if not outcome.created:
            typer.echo(f"(the same request was already submitted: {outcome.record.id} is"
                       f" {outcome.record.state.value})", err=True)


def _job_id(job_id: str) -> str:
    from workflows.store import check_job_id

    try:
        return check_job_id(job_id)
    except ValueError as exc:
        raise _fail(str(exc)) from None


def show_command(
    job_id: str = typer.Argument(..., help="the job id (job-...)"),
    json_out: bool = typer.Option(False, "--json", help="print the job record as JSON"),
) -> None:
    """Show one job: state, progress, chunks, result or error."""
    job_id = _job_id(job_id)
    record = _client().get(job_id)
    if record is None:
        raise _fail(f"no job {job_id} (finished jobs expire after KERNELEVO_QUEUE_RETENTION_S)", EXIT_NOT_FOUND)
    typer.echo(json.dumps(_data(record), indent=2) if json_out else "\n".join(describe(record)))


def list_command(
    state: list[str] = typer.Option([], "--state", help="only jobs in this state (repeatable)"),
    limit: int = typer.Option(50, "--limit", min=1, max=10_000, help="at most this many, newest first"),
    json_out: bool = typer.Option(False, "--json", help="print the job records as a JSON list"),
) -> None:
    """List jobs, newest first."""
    from workflows.models import JobState

    known = [s.value for s in JobState]
    bad = [s for s in state if s not in known]
    if bad:
        raise _fail(f"--state {', '.join(map(repr, bad))}: not a job state; use one of {', '.join(known)}")
    records = _client().list([JobState(s) for s in state] or None, limit)
    if json_out:
        typer.echo(json.dumps([_data(r, INTERNAL | {"result"}) for r in records], indent=2))
        return
    for r in records:
        typer.echo(f"{r.id}  {r.state.value:<14} {r.progress.evaluated:>4} evaluated  chunks {r.chunks:<3}"
                   f" {r.created_at:%Y-%m-%d %H:%M}  {_safe(r.spec.op_id)}")


def cancel_command(
    job_id: str = typer.Argument(..., help="the job id (job-...)"),
    json_out: bool = typer.Option(False, "--json", help="print the outcome and the job record as JSON"),
) -> None:
    """Cancel a job: a queued one at once, a running one at its next candidate (within one generation)."""
    from workflows.models import CancelOutcome

    job_id = _job_id(job_id)
    outcome, record = _client().cancel(job_id)
    if json_out:
        typer.echo(json.dumps({"outcome": outcome.value,
                               "job": _data(record) if record is not None else None}, indent=2))
    else:
        messages = {
            CancelOutcome.CANCELLED: f"{job_id}: cancelled",
            CancelOutcome.REQUESTED: f"{job_id}: cancel requested; the running chunk stops at its next candidate",
            CancelOutcome.FINISHED: f"{job_id}: already {record.state.value if record else 'finished'}",
            CancelOutcome.NOT_FOUND: f"no job {job_id}",
        }
        typer.echo(messages[outcome], err=outcome in (CancelOutcome.FINISHED, CancelOutcome.NOT_FOUND))
    if outcome in (CancelOutcome.FINISHED, CancelOutcome.NOT_FOUND):
        raise typer.Exit(EXIT_NOT_FOUND)


def run_command(
    job_id: str = typer.Argument(..., help="the job id (job-...)"),
    out: Path = typer.Option(..., "--out", help="a new or empty directory to write the job's run directory into"),
) -> None:
    """Write a job's run directory (as far as the job has got) from the worker tier's mirror in Redis into OUT:
    its candidates, proposals and summary, so that ``kernelevo report OUT`` renders the full report (timeline,
    rejections, lineage) and ``kernelevo optimize --resume OUT`` can continue it on this machine."""
    job_id = _job_id(job_id)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise _fail(f"--out {out}: exists and is not an empty directory; name a new one")
    client = _client()
    if client.get(job_id) is None:
        raise _fail(f"no job {job_id} (finished jobs expire after KERNELEVO_QUEUE_RETENTION_S)", EXIT_NOT_FOUND)
    try:
        client.restore_run(job_id, out)
    except FileNotFoundError as exc:
        raise _fail(str(exc), EXIT_NOT_FOUND) from None
    except (OSError, ValueError) as exc:
        raise _fail(f"the run of {job_id} could not be written to {out}: {exc}", EXIT_USAGE) from None
    typer.echo(f"wrote the run of {job_id} to {out}")
    typer.echo(f"Next: kernelevo report {out} --format html --out {out}/report", err=True)
