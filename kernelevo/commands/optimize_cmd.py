"""``kernelevo optimize``: search for faster verified kernels in-process (no queue, no GitHub).

Exit status: 0 when every op searched has an accepted kernel, 1 when some op has none, 2 when the
search could not run (bad path, broken task, proposer unavailable), 130 when interrupted (the run
directory is intact: continue it with ``--resume``).
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import typer


def register(app: typer.Typer) -> None:
    """Add the ``optimize`` command to the CLI."""
    app.command("optimize")(optimize_command)


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"kernelevo optimize: {message}", err=True)
    return typer.Exit(code)


def _default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _budget(base: dict[str, Any], **given: Any) -> Any:
    from kernelevo.search.budget import Budget

    merged = {**base, **{k: v for k, v in given.items() if v is not None}}
    return Budget.from_dict(merged)


# With no PATH, search the op bundled with the package: works on a fresh machine with no GPU and no endpoint.
EMBEDDED_DEFAULT = Path(__file__).resolve().parent.parent / "examples" / "rms_norm.py"


def optimize_command(
    path: Path | None = typer.Argument(None, help="a KernelBench task file, or a file/repo with decorated ops "
                                       "[default: the bundled RMSNorm example]"),
    op: str | None = typer.Option(None, "--op", help="only this op (op id, qualname or kernel name)"),
    backend: str = typer.Option("triton", "--backend", help="triton, cuda or any"),
    proposer: str | None = typer.Option(None, "--proposer",
                                        help="offline, llm or MODULE:FACTORY (default: llm if an endpoint is set)"),
    budget_candidates: int | None = typer.Option(None, "--budget-candidates", help="candidates to evaluate [32]"),
    budget_minutes: float | None = typer.Option(None, "--budget-minutes", help="wall time of the search"),
    budget_tokens: int | None = typer.Option(None, "--budget-tokens", help="proposer tokens (in + out)"),
    budget_usd: float | None = typer.Option(None, "--budget-usd", help="proposer money (price table per model)"),
    plateau: int | None = typer.Option(None, "--plateau",
                                       help="stop after N generations without improvement [6; 2 on cpu]"),
    device: str | None = typer.Option(None, "--device", help="cpu or cuda (default: cuda if available)"),
    resume: Path | None = typer.Option(None, "--resume", help="continue the run in this run directory"),
    seed: int = typer.Option(0, "--seed", help="random seed of the search (deterministic per seed)"),
    write_kernel: bool = typer.Option(False, "--write-kernel", help="store the accepted kernel in kernels/<op>/"),
    json_lines: bool = typer.Option(False, "--json-lines", help="progress and result as JSON lines on stdout"),
    quiet: bool = typer.Option(False, "--quiet", help="no live display; print the summary only"),
    runs_dir: Path | None = typer.Option(None, "--runs-dir", help="where run directories go [runs/]"),
    generation_size: int | None = typer.Option(None, "--generation-size", min=1,
                                               help="candidates per generation [8]"),
    parallel_evaluations: int | None = typer.Option(None, "--parallel-evaluations", min=1,
                                                    help="candidates judged at once [3 on cuda, 1 on cpu]"),
) -> None:
    """Search for a faster verified kernel for each op under PATH (or continue a run with --resume)."""
    from kernelevo.search.config import SearchConfig
    from kernelevo.search.proposers import ProposerError, make_proposer
    from kernelevo.search.targets import TargetError, resolve_targets
    from kernelevo.settings import get_settings

    if backend not in ("triton", "cuda", "any"):
        raise _fail(f"--backend must be triton, cuda or any, not {backend!r}")
    if device not in (None, "cpu", "cuda"):
        raise _fail(f"--device must be cpu or cuda, not {device!r}")
    if json_lines and quiet:
        raise _fail("choose one of --json-lines and --quiet")
    if path is not None and resume is not None:
        raise _fail("give PATH to start a search, or --resume RUN_DIR to continue one (not both)")
    from kernelevo.sandbox import harden_trusted_process

    harden_trusted_process()  # this process may hold an LLM key; candidates and the op run in sandboxes
    given = dict(candidates=budget_candidates, minutes=budget_minutes, tokens=budget_tokens, usd=budget_usd,
                 plateau_generations=plateau)
    try:
        proposer_obj = make_proposer(proposer)
        if resume is not None:
            jobs = [_resume_job(resume, given)]
        else:
            targets = resolve_targets(path if path is not None else EMBEDDED_DEFAULT, op)
            jobs = [{"target": t, "run_dir": None} for t in targets]
    except (ProposerError, TargetError, FileNotFoundError, ValueError) as exc:
        raise _fail(str(exc)) from None
    device = device or (jobs[0].get("device") if resume else None) or _default_device()
    if device == "cpu" and plateau is None and resume is None:
        from kernelevo.search.budget import CPU_PLATEAU_GENERATIONS

        given["plateau_generations"] = CPU_PLATEAU_GENERATIONS
    root = runs_dir or get_settings().runs_dir
    shape = {k: v for k, v in (("generation_size", generation_size), ("parallel_evaluations", parallel_evaluations))
             if v is not None}
    config = SearchConfig.from_dict(shape) if shape else None
    all_accepted = True
    try:
        for job in jobs:
            all_accepted &= _search_job(job, root, proposer_obj, backend, device, seed, given, config,
                                        json_lines, quiet, write_kernel)
    finally:
        close = getattr(proposer_obj, "close", None)
        if callable(close):
            close()
    if not all_accepted:
        raise typer.Exit(1)


def _search_job(job, root, proposer_obj, backend, device, seed, given, config, json_lines, quiet,
                write_kernel) -> bool:
    """Search one op; True when it ends with an accepted kernel."""
    from kernelevo.search.targets import write_accepted_kernel

    target = job["target"]
    result = _run_one(target, job, root, proposer_obj, backend, device, seed, given, config, json_lines, quiet)
    best = result.best_candidate
    if write_kernel and best is not None and best.verdict is not None:
        directory = write_accepted_kernel(target, best.source, best.verdict, device)
        typer.echo(f"Wrote {directory}", err=json_lines)
    return best is not None


def _resume_job(run_dir: Path, given: dict[str, Any]) -> dict[str, Any]:
    from kernelevo.discovery import DiscoveredOp
    from kernelevo.search.rundir import RunDir
    from kernelevo.search.targets import Target, TargetError, resolve_targets

    meta = RunDir(run_dir).read_meta()
    target_file = Path(run_dir) / "target.json"
    if target_file.is_file():
        data = json.loads(target_file.read_text(encoding="utf-8"))
        target = Target(DiscoveredOp(**data["op"]), Path(data["repo_root"]))
    else:  # a run started through the API (bench/run.py, a worker): its task file is the target
        targets = resolve_targets(Path(meta["task_path"]))
        if len(targets) != 1:
            raise TargetError(f"{run_dir}: cannot tell which op of {meta['task_path']} this run searched")
        target = targets[0]
    return {"target": target, "run_dir": Path(run_dir), "meta": meta, "device": meta.get("device")}


def _run_one(target, job, root, proposer, backend, device, seed, given, config, json_lines, quiet):
    from evaluator import EvalSetupError
    from kernelevo.search.api import run_search
    from kernelevo.search.progress import JsonLinesReporter, RichReporter, summary_lines
    from kernelevo.search.rundir import reserve_run_dir

    meta = job.get("meta")
    op_id = target.op_id
    if meta is not None:  # resume: what the run was started with, unless overridden now
        run_dir, backend, op_id = job["run_dir"], meta.get("backend", backend), meta.get("op_id", op_id)
        budget = _budget(meta.get("budget") or {}, **given)
        task_path = Path(meta["task_path"])
    else:
        run_dir = reserve_run_dir(Path(root), target.op_id, datetime.now(timezone.utc))
        (run_dir / "target.json").write_text(json.dumps(
            {"op": target.op.to_dict(), "repo_root": str(target.repo_root)}, indent=2), encoding="utf-8")
        budget = _budget({}, **given)
        task_path = target.task_path(run_dir)
    reporter = JsonLinesReporter(sys.stdout) if json_lines else None
    live = RichReporter(op_id, budget) if not (json_lines or quiet) else None
    try:
        if live is not None:
            live.__enter__()
        result = run_search(task_path, op_id=op_id, backend=backend, proposer=proposer, budget=budget,
                            device=device, run_dir=run_dir, seed=seed, resume=meta is not None, config=config,
                            on_progress=reporter or live)
    except EvalSetupError as exc:
        raise _fail(f"{target.op_id}: {exc}") from None
    except KeyboardInterrupt:
        raise _fail(f"interrupted; continue with: kernelevo optimize --resume {run_dir}", 130) from None
    finally:
        if live is not None:
            live.__exit__(None, None, None)
    if json_lines:
        typer.echo(json.dumps({"event": "result", **result.to_dict()}, default=str))
    else:
        for line in summary_lines(result):
            typer.echo(line)
    return result
