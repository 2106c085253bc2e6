"""``kernelevo optimize``: search for faster verified kernels in-process (no queue, no GitHub).

Exit status: 0 when every op searched has an accepted kernel, 1 when some op has none, 2 when the
search could not run (bad arguments or path, proposer unavailable) or some op could not be searched
(its task failed to load: it is reported with its file and line, and the other ops are still searched),
130 when interrupted (the run directory is intact: continue it with ``--resume``).
"""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
import signal
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import typer

from kernelevo.cli_failures import OpFailure, closing_lines, describe_setup_error, task_file_problem


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


# Each budget flag: (what it counts, an example value). Limits must be positive: a zero or negative one would
# run a whole session (and leave a run directory) that cannot evaluate anything.
_BUDGET_FLAGS = {
    "candidates": ("--budget-candidates", "candidates to evaluate", "32"),
    "minutes": ("--budget-minutes", "minutes of search", "10"),
    "tokens": ("--budget-tokens", "proposer tokens", "200000"),
    "usd": ("--budget-usd", "dollars of proposer money", "2.50"),
    "plateau": ("--plateau", "generations without improvement before stopping", "6"),
}


def budget_problems(**given: float | None) -> list[str]:
    """What is wrong with the budget flags given (None: not given), one actionable sentence each."""
    problems = []
    for key, value in given.items():
        if value is not None and not value > 0:  # also refuses NaN
            flag, counts, example = _BUDGET_FLAGS[key]
            problems.append(f"{flag} must be positive (the {counts}), not {value:g}; e.g. {flag} {example}, "
                            "or leave it out for the default")
    return problems


# With no PATH, search the op bundled with the package: works on a fresh machine with no GPU and no endpoint.
EMBEDDED_DEFAULT = Path(__file__).resolve().parent.parent / "examples" / "rms_norm.py"


def optimize_command(
    path: Path | None = typer.Argument(None, help="a KernelBench task file, or a file/repo with decorated ops  "
                                       "[default: the bundled RMSNorm example]", show_default=False),
    op: str | None = typer.Option(None, "--op", help="only this op (op id, qualname or kernel name)"),
    backend: str = typer.Option("triton", "--backend", help="triton, cuda or any"),
    proposer: str | None = typer.Option(
        None, "--proposer", help="offline, llm or MODULE:FACTORY  [default: llm if an endpoint is set, else offline]"),
    budget_candidates: int | None = typer.Option(
        None, "--budget-candidates",
        help="candidates to evaluate  [default: 32, or budgets.candidates of .github/kernelevo.yml]"),
    budget_minutes: float | None = typer.Option(
        None, "--budget-minutes",
        help="wall time of the search  [default: no limit, or budgets.minutes of .github/kernelevo.yml]"),
    budget_tokens: int | None = typer.Option(
        None, "--budget-tokens",
        help="proposer tokens (in + out)  [default: no limit, or budgets.tokens of .github/kernelevo.yml]"),
    budget_usd: float | None = typer.Option(
        None, "--budget-usd", help="proposer money in USD (price table per model)  [default: no limit, or "
        "budgets.money_usd of .github/kernelevo.yml]"),
    plateau: int | None = typer.Option(None, "--plateau",
                                       help="stop after N generations without improvement  [default: 6; 2 on cpu]"),
    device: str | None = typer.Option(None, "--device", help="cpu or cuda  [default: cuda if available]"),
    resume: Path | None = typer.Option(None, "--resume", help="continue the run in this run directory"),
    seed: int = typer.Option(0, "--seed", help="random seed of the search (deterministic per seed)"),
    write_kernel: bool = typer.Option(False, "--write-kernel", help="store the accepted kernel in kernels/<op>/"),
    force: bool = typer.Option(False, "--force", help="with --write-kernel: replace a stored kernel even when it "
                               "is better or newer than this run's"),
    json_lines: bool = typer.Option(False, "--json-lines", help="progress and result as JSON lines on stdout"),
    quiet: bool = typer.Option(False, "--quiet", help="no progress display; print the summary only"),
    runs_dir: Path | None = typer.Option(None, "--runs-dir", help="where run directories go  [default: runs/, or "
                                            "KERNELEVO_RUNS_DIR]"),
    generation_size: int | None = typer.Option(None, "--generation-size", min=1,
                                               help="candidates per generation  [default: 8]"),
    parallel_evaluations: int | None = typer.Option(None, "--parallel-evaluations", min=1,
                                                    help="candidates judged at once  [default: 3 on cuda, 1 on cpu]"),
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
    problems = budget_problems(candidates=budget_candidates, minutes=budget_minutes, tokens=budget_tokens,
                               usd=budget_usd, plateau=plateau)
    if problems:
        raise _fail("; ".join(problems))
    from kernelevo.sandbox import harden_trusted_process

    harden_trusted_process()  # this process may hold an LLM key; candidates and the op run in sandboxes
    given = dict(candidates=budget_candidates, minutes=budget_minutes, tokens=budget_tokens, usd=budget_usd,
                 plateau_generations=plateau)
    from_config: dict[str, Any] = {}
    if resume is None:
        search_path = path if path is not None else EMBEDDED_DEFAULT
        problem = _task_file_problem(search_path)
        if problem is not None:
            raise _fail(problem)
        from_config = _config_budget(search_path)  # typer.Exit on an invalid .github/kernelevo.yml
    try:
        proposer_obj = make_proposer(proposer)
        if resume is not None:
            jobs = [_resume_job(resume, given)]
        else:
            targets = resolve_targets(search_path, op)
            jobs = [{"target": t, "run_dir": None, "config_budget": from_config} for t in targets]
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
    outcomes: list[bool | OpFailure] = []
    try:
        for job in jobs:
            outcomes.append(_search_job(job, root, proposer_obj, backend, device, seed, given, config,
                                        json_lines, quiet, write_kernel, force))
    finally:
        close = getattr(proposer_obj, "close", None)
        if callable(close):
            close()
    failures = [o for o in outcomes if isinstance(o, OpFailure)]
    for line in closing_lines(failures, len(jobs), None if path is None else str(path)):
        typer.echo(line, err=True)
    if failures:
        raise typer.Exit(2)
    if not all(outcomes):
        raise typer.Exit(1)


# ``budgets:`` keys of .github/kernelevo.yml and the Budget fields they set for a local search.
_CONFIG_BUDGET_KEYS = {"candidates": "candidates", "minutes": "minutes", "tokens": "tokens", "money_usd": "usd"}


def config_budget(budgets: Any) -> dict[str, Any]:
    """The budget limits a repository's config sets explicitly (keys it leaves out keep the local defaults,
    which are smaller than the bot's), as Budget fields; flags given on the command line override them."""
    return {_CONFIG_BUDGET_KEYS[key]: getattr(budgets, key) for key in budgets.model_fields_set
            if key in _CONFIG_BUDGET_KEYS}


def _config_budget(path: Path) -> dict[str, Any]:
    """The budgets of the ``.github/kernelevo.yml`` of the repository holding PATH; an invalid file stops the
    command (exit 2) with its problems, each with its key and line, whether PATH is the repository or a file."""
    from kernelevo.repo_config import RepoConfigError, load_repo_config_for
    from kernelevo.search.targets import find_repo_root

    if not path.exists():
        return {}  # resolve_targets says so
    try:
        config = load_repo_config_for(find_repo_root(path))
    except RepoConfigError as exc:
        raise _fail(f"{exc}\nFix the file (docs/repo-config.md lists the keys), then run the command again.") \
            from None
    except OSError as exc:
        raise _fail(f"the repository's .github/kernelevo.yml cannot be read: {exc}") from None
    return config_budget(config.budgets)


def _task_file_problem(path: Path) -> str | None:
    """A KernelBench task file that lacks a hook (``get_inputs``...): the same message as ``kernelevo eval``."""
    if not path.is_file() or path.suffix != ".py":
        return None
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None  # resolve_targets says what is wrong with it
    return task_file_problem(path, source)


def _search_job(job, root, proposer_obj, backend, device, seed, given, config, json_lines, quiet,
                write_kernel, force) -> bool | OpFailure:
    """Search one op: True when it ends with an accepted kernel, the failure when it could not be searched."""
    target = job["target"]
    result = _run_one(target, job, root, proposer_obj, backend, device, seed, given, config, json_lines, quiet)
    if isinstance(result, OpFailure):
        return result
    best = result.best_candidate
    if best is None or best.verdict is None:
        return best is not None
    if write_kernel:
        from kernelevo.install_kernel import install_accepted_kernel
        from kernelevo.kernel_store import KernelStoreError

        try:
            installed = install_accepted_kernel(target, best.source, best.verdict, device,
                                                run_started=result.started, force=force)
        except (KernelStoreError, OSError) as exc:
            typer.echo(f"kernelevo optimize: {target.op_id}: the kernel could not be written: {exc}", err=True)
            return False
        for line in installed.lines(shlex.quote(result.run_dir)):
            typer.echo(line, err=json_lines or not installed.written)
        return True
    typer.echo(f"Next: install it into kernels/ (used when the op is called where it was verified): "
               f"kernelevo optimize --resume {shlex.quote(result.run_dir)} --write-kernel", err=json_lines)
    return True


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
    from kernelevo.search.progress import JsonLinesReporter, PlainReporter, RichReporter, summary_lines
    from kernelevo.search.rundir import reserve_run_dir

    meta = job.get("meta")
    op_id = target.op_id
    if meta is not None:  # resume: what the run was started with, unless overridden now
        run_dir, backend, op_id = job["run_dir"], meta.get("backend", backend), meta.get("op_id", op_id)
        budget = _budget(meta.get("budget") or {}, **given)
        task_path = Path(meta["task_path"])
        if target.op.kind != "task":  # the run's task.py imports the op from the repository it was written for
            from kernelevo.sandbox.policy import vouch_for_task_root

            vouch_for_task_root(target.repo_root)
    else:
        run_dir = reserve_run_dir(Path(root), target.op_id, datetime.now(timezone.utc))
        (run_dir / "target.json").write_text(json.dumps(
            {"op": target.op.to_dict(), "repo_root": str(target.repo_root)}, indent=2), encoding="utf-8")
        budget = _budget(job.get("config_budget") or {}, **given)
        task_path = target.task_path(run_dir)
    reporter = None
    live = None
    if json_lines:
        reporter = JsonLinesReporter(sys.stdout)
    elif not quiet and _is_terminal(sys.stderr):
        reporter = live = RichReporter(op_id, budget)
    elif not quiet:  # a log (CI): plain lines as the search goes, no panel
        reporter = PlainReporter(op_id, budget, sys.stderr)
    interrupted = threading.Event()
    try:
        # The panel is closed before anything else is printed (the summary, the resume hint after Ctrl-C):
        # while it is live it redraws itself over the lines below it.
        with _ctrl_c(interrupted), live if live is not None else contextlib.nullcontext():
            result = run_search(task_path, op_id=op_id, backend=backend, proposer=proposer, budget=budget,
                                device=device, run_dir=run_dir, seed=seed, resume=meta is not None, config=config,
                                on_progress=reporter, should_cancel=interrupted.is_set)
        if interrupted.is_set():  # the KeyboardInterrupt was lost on its way (below): the search stopped anyway
            raise KeyboardInterrupt
    except EvalSetupError as exc:
        return _setup_failed(target, exc, run_dir if meta is None else None, json_lines)
    except KeyboardInterrupt:
        raise _fail(f"interrupted; the run directory is intact, continue with: kernelevo optimize --resume "
                    f"{shlex.quote(str(run_dir))}", 130) from None
    if json_lines:
        typer.echo(json.dumps({"event": "result", **result.to_dict()}, default=str))
    else:
        if not quiet:
            typer.echo("")  # the summary stands apart from the progress above it, also in a merged CI log
        for line in summary_lines(result):
            typer.echo(line)
    return result


@contextlib.contextmanager
def _ctrl_c(interrupted: threading.Event) -> Any:
    """Ctrl-C as Python's default handler takes it (KeyboardInterrupt in the main thread), and remembered: an
    exception raised while the interpreter runs a finaliser (``__del__``, a weakref callback) is only printed,
    never propagated, so the flag also stops the search at its next candidate (``should_cancel``) and the run
    ends as interrupted, exit 130, whichever of the two arrives."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        interrupted.set()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:  # a handler installed from C reads as None: Python's own is the default then
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)


def _is_terminal(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except ValueError:  # a closed stream
        return False


def _setup_failed(target, exc: Exception, fresh_run_dir: Path | None, json_lines: bool) -> OpFailure:
    """Report an op whose task could not be set up; a run directory made for it just now holds nothing
    worth keeping (no candidate was judged) and is removed."""
    op = target.op
    failure = describe_setup_error(op.op_id, op.kind, op.path, op.line, target.repo_root, str(exc))
    if fresh_run_dir is not None:
        shutil.rmtree(fresh_run_dir, ignore_errors=True)
    if json_lines:
        typer.echo(json.dumps({"event": "error", **failure.to_dict()}))
    typer.echo(f"kernelevo optimize: {failure.headline()}", err=True)
    detail = failure.message.partition("\n")[2]
    if detail:
        typer.echo(detail, err=True)
    return failure
