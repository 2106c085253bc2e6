"""``kernelevo eval``: verify one candidate kernel against one task (the verifier's CLI contract).

Exit status: 0 accepted, 1 rejected, 2 when the evaluation could not run (bad task file, missing
dependency), with a message naming the file and the problem.
"""

from __future__ import annotations

from pathlib import Path

import typer

from kernelevo.cli_failures import task_file_problem


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_command)


def eval_command(
    task: Path = typer.Option(..., "--task", help="KernelBench-format task file (Model, get_inputs, get_init_inputs)."),
    candidate: Path = typer.Option(..., "--candidate", help="Candidate module defining ModelNew."),
    device: str = typer.Option("cpu", "--device", help="cpu (Triton interpreter, correctness only) or cuda."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (the verdict) instead of a summary."),
    seeds: int = typer.Option(5, "--seeds", min=1, help="Correctness seeds per case."),
    timeout: float = typer.Option(300.0, "--timeout", help="Wall-clock limit per phase, seconds."),
    trials: int = typer.Option(100, "--trials", min=10, help="Timed calls per case (GPU)."),
) -> None:
    """Evaluate CANDIDATE against TASK: static checks, sandboxed correctness, and (on cuda) timing."""
    from evaluator import EvalOptions, EvalSetupError, evaluate
    from evaluator.report import render_summary

    if device not in ("cpu", "cuda"):
        _fail(f"--device must be cpu or cuda, not {device!r}", as_json)
    for label, path in (("task", task), ("candidate", candidate)):
        if not path.is_file():
            _fail(f"{label} file not found: {path}", as_json)
    problem = task_file_problem(task, task.read_text(encoding="utf-8", errors="replace"))
    if problem is not None:  # said before any sandbox starts, and in the same words as `kernelevo optimize`
        _fail(problem, as_json)
    options = EvalOptions(seeds=seeds, timeout_s=timeout, timing_trials=trials)
    # A generated task (a run directory's task.py) imports the op from its repository: the one this command runs
    # in is yours to vouch for; a root the task's text names anywhere else is refused (docs/security.md).
    from kernelevo.sandbox.policy import vouch_for_task_root
    from kernelevo.search.targets import find_repo_root

    vouch_for_task_root(find_repo_root(Path.cwd()))
    try:
        verdict = evaluate(task, candidate, device=device, options=options)
    except EvalSetupError as exc:
        _fail(str(exc), as_json)
    if as_json:
        typer.echo(verdict.to_json())
    else:
        typer.echo(render_summary(verdict))
    raise typer.Exit(0 if verdict.accepted else 1)


def _fail(message: str, as_json: bool) -> None:
    import json

    if as_json:
        typer.echo(json.dumps({"verdict": "error", "reason": "setup_error", "detail": message}))
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)
