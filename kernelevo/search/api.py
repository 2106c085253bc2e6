"""The stable seam of the search for the CLI, the bot and the Celery workers: :func:`run_search`.

A Celery chunk calls ``run_search(..., resume=True)`` on the same run directory until the result's
``stop_reason`` is not ``"cancelled"``; each call continues exactly where the last one stopped.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import platform
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evaluator.verdict import Environment, EvalSetupError, Verdict
from kernelevo.search.budget import Budget
from kernelevo.search.config import Evaluator, SearchConfig
from kernelevo.search.engine import SearchLoop
from kernelevo.search.fitness import is_timed
from kernelevo.search.pricing import load_price_table
from kernelevo.search.proposer import Proposer
from kernelevo.search.result import BestCandidate, Progress, SearchResult
from kernelevo.search.rundir import RunDir

log = logging.getLogger(__name__)

CPU_NOTE = (
    "Nothing was timed: this run checked candidates on the CPU (Triton interpreter), so a fitness of 1.0"
    " means 'accepted and correct', not a speedup. Speedups need a GPU: rerun with --device cuda there."
)


def hardware_facts(device: str, environment: Environment | Mapping[str, Any] | None) -> dict[str, Any]:
    """Facts about the device for the proposer's prompt, from what the evaluator measured (no CUDA
    context in the search process), in the shape ``kernelevo.search.hardware.describe_hardware`` reads."""
    try:
        env = environment if isinstance(environment, Environment) else Environment.model_validate(environment or {})
    except ValidationError as exc:  # its verdicts say so too (each is a rejection naming the field)
        log.warning("the evaluator reported an environment that does not validate, so the proposer gets no "
                    "device facts: %s", exc)
        env = Environment()
    if device == "cuda" and env.gpu:
        facts = {"device": "cuda", "name": env.gpu, "sm_count": env.sm_count, "capability": env.capability,
                 "memory_gb": env.gpu_memory_gb, "l2_mb": env.l2_cache_mb, "torch": env.torch,
                 "max_shared_memory_per_block": env.shared_memory_per_block}
    else:
        facts = {"device": "cpu", "name": env.cpu or platform.machine(), "cores": os.cpu_count(), "torch": env.torch,
                 "note": "no GPU: Triton kernels run in the interpreter (TRITON_INTERPRET=1); timings need a GPU"}
    return {k: v for k, v in facts.items() if v is not None}


@contextlib.contextmanager
def _evaluation_session(task_path: Path, device: str, options: Any) -> Iterator[Evaluator]:
    from evaluator import EvalOptions, EvaluationSession

    with EvaluationSession(task_path, device=device, options=options or EvalOptions()) as session:
        yield session


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def run_search(
    task_path: Path,
    *,
    op_id: str,
    backend: str,
    proposer: Proposer,
    budget: Budget,
    device: str,
    run_dir: Path,
    seed: int = 0,
    on_progress: Callable[[Progress], None] | None = None,
    should_cancel: Callable[[], bool] | None = None,
    resume: bool = False,
    config: SearchConfig | None = None,
    evaluator: Evaluator | None = None,
    eval_options: Any = None,
) -> SearchResult:
    """Search for a faster verified kernel for one op; durable in ``run_dir`` and resumable.

    ``evaluator`` defaults to an ``EvaluationSession`` on ``task_path`` (tests pass a double);
    ``config`` defaults to :class:`SearchConfig`. On resume the seed and config recorded in the run
    directory win, so that the replayed plan is the one that was interrupted; ``resume=True`` on a
    directory without a run starts one (so chunked workers can always pass it). Cancellation
    (``should_cancel``) stops between candidates with ``stop_reason == "cancelled"``. Raises
    ``evaluator.EvalSetupError`` when the task itself cannot be evaluated.
    """
    _refuse_unusable_budget(budget)
    given_task, task_path = Path(task_path), Path(task_path).resolve()  # verdicts show the path as given
    try:
        task_source = task_path.read_text(encoding="utf-8")
    except OSError as exc:
        raise FileNotFoundError(f"task file {task_path}: cannot read it ({exc.strerror})") from exc
    prices = load_price_table()  # a broken override file fails before the run directory is made
    _refuse_unsupported_ops(proposer, task_source, op_id)
    run = RunDir(Path(run_dir))
    started = _now()
    if resume and run.meta_path.exists():
        meta = run.read_meta()
        run.prepare_resume()
        seed = int(meta.get("seed", seed))
        config = SearchConfig.from_dict(meta.get("config") or {})
    else:
        config = config or SearchConfig()
        run.create({
            "op_id": op_id, "task_path": str(task_path), "backend": backend, "device": device, "seed": seed,
            "proposer": getattr(proposer, "name", type(proposer).__name__), "budget": budget.to_dict(),
            "config": config.to_dict(), "created": started,
        })
    previous = []
    if run.summary_path.exists():
        previous = SearchResult.from_dict(json.loads(run.summary_path.read_text(encoding="utf-8"))).stop_reasons

    in_flight = config.evaluations_in_flight(device)
    if evaluator is None:  # started candidate processes ready for the evaluations in flight (and GPU start-up)
        from evaluator import EvalOptions
        from evaluator.options import ready_workers_for

        # the winner alone is confirmed in a plain process (_confirm_best), not every accepted candidate
        eval_options = dataclasses.replace(eval_options or EvalOptions(),
                                           ready_workers=ready_workers_for(device, in_flight), plain_run=False)
    context = contextlib.nullcontext(evaluator) if evaluator is not None else _evaluation_session(
        given_task, device, eval_options
    )
    clock = time.perf_counter
    began = clock()
    with context as session:
        opened = clock()
        loop = SearchLoop(
            op_id=op_id, task_source=task_source, proposer=proposer, evaluator=session, run=run, budget=budget,
            config=config, seed=seed, backend=backend, prices=prices,
            hardware=hardware_facts(device, getattr(session, "environment", None)),
            on_progress=on_progress, should_cancel=should_cancel,
            evaluations_in_flight=in_flight,
        )
        reason = loop.run()
        searched = clock()
        baselines = getattr(session, "baselines", None)
        environment = dict(getattr(session, "environment", None) or {})
        confirmed = _confirm_best(session, loop) if reason != "cancelled" else None
        checked = clock()
        sanitized = _sanitize_best(session, loop, device) if reason != "cancelled" and (
            confirmed is None or confirmed.accepted) else None
        phases = {"session_start_s": round(opened - began, 3), **(getattr(session, "start_phases", None) or {}),
                  "search_s": round(searched - opened, 3), "plain_run_s": round(checked - searched, 3),
                  "sanitize_s": round(clock() - checked, 3)}
    result = _result(loop, run, op_id, device, reason, baselines, started, previous)
    result.environment, result.phases = environment, phases
    if confirmed is not None and result.best is not None:
        if confirmed.accepted:  # the winner's verdict, with the plain run's checks in its evidence
            result.best["verdict"] = confirmed.to_dict()
        else:  # right under the verifier's eyes only: not published
            why = f"The best kernel ({result.best['id']}) failed its plain-process run: {confirmed.detail[:600]}"
            result.note = f"{result.note} {why}".strip()
            result.best = None
    if sanitized is not None:
        result.sanitizer, failed = sanitized
        if failed and result.best is not None:  # a race or a bad access the correctness calls missed: not published
            why = f"The best kernel ({result.best['id']}) failed compute-sanitizer ({failed}): no kernel is reported."
            result.note = f"{result.note} {why}".strip()
            result.best = None
    run.write_summary({**result.to_dict(), "budget": budget.to_dict(), "config": config.to_dict(), "seed": seed})
    return result


class UnsupportedOps(EvalSetupError):
    """The proposer cannot write a kernel for some ATen ops of the op (said before any baseline is measured)."""


def _refuse_unsupported_ops(proposer: Proposer, task_source: str, op_id: str) -> None:
    """A proposer that can tell (the offline one, from the traced graph) says at once which ATen ops it cannot
    lower, where in the user's source, and what to do: before the session starts and the baselines are timed."""
    ask = getattr(proposer, "unsupported", None)
    if not callable(ask):
        return
    from kernelevo.search.offline.analysis import unsupported_message

    ops = ask(task_source)
    if ops:
        raise UnsupportedOps(unsupported_message(ops, op_id))


def _refuse_unusable_budget(budget: Budget) -> None:
    """A zero or negative limit would start a session (and make a run directory) that can evaluate nothing."""
    limits = {"candidates": budget.candidates, "minutes": budget.minutes, "tokens": budget.tokens,
              "usd": budget.usd, "plateau_generations": budget.plateau_generations,
              "exhausted_generations": budget.exhausted_generations}
    bad = [f"{name}={value!r}" for name, value in limits.items() if value is not None and not value > 0]
    if bad:
        raise ValueError(f"run_search: budget limits must be positive (None: unlimited), not {', '.join(bad)}")


def _confirm_best(session: Any, loop: SearchLoop) -> Verdict | None:
    """The winner once more in a plain process, as a user's program runs it (evaluator.plain_run): its verdict
    with that run's evidence, or the rejection; None where the evaluator has no such step or ran it on every
    accepted candidate already."""
    best = loop.population.best
    confirm = getattr(session, "confirm_plain", None)
    if best is None or best.verdict is None or not callable(confirm) or \
            getattr(getattr(session, "options", None), "plain_run", False):
        return None
    verdict: Verdict = confirm(best.source, best.verdict)
    return verdict


def _sanitize_best(session: Any, loop: SearchLoop, device: str) -> tuple[list[dict[str, Any]], str] | None:
    """On a GPU, the winner once more under compute-sanitizer racecheck and memcheck (evaluator.sanitize):
    (the results as JSON, the summary of the failing tools, '' when none failed); None where nothing ran."""
    best = loop.population.best
    if device != "cuda" or best is None or not callable(getattr(session, "sanitize", None)):
        return None
    results = session.sanitize(best.source)
    failed = "; ".join(f"{r.tool}: {r.summary}" for r in results if r.status.value == "errors")
    return [r.model_dump(mode="json") for r in results], failed


def _result(
    loop: SearchLoop, run: RunDir, op_id: str, device: str, reason: str, baselines: Any, started: str,
    previous: list[dict[str, Any]],
) -> SearchResult:
    state, best = loop.state, loop.population.best
    # Money actually spent: every reply logged, including look-ahead replies the loop never reached.
    spent = [p for record in run.proposals() for p in record.get("proposals") or []]
    tokens_in = sum(int(p.get("tokens_in") or 0) for p in spent)
    tokens_out = sum(int(p.get("tokens_out") or 0) for p in spent)
    cost = sum(float(p.get("cost_usd") or 0.0) for p in spent)
    elapsed = loop.elapsed()
    timed = is_timed(best.verdict if best else None)
    ended = _now()
    return SearchResult(
        op_id=op_id, run_dir=str(run.path), stop_reason=reason,
        best=BestCandidate(id=best.id, source=best.source, verdict=best.verdict, fitness=best.fitness
                           ).model_dump(mode="json") if best else None,
        candidates_evaluated=state.usage.candidates, candidates_accepted=state.accepted,
        tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=round(cost, 6),
        evaluator_busy_fraction=round(state.eval_s / elapsed, 4) if elapsed > 0 else None,
        baselines=baselines, started=started, ended=ended, time_to_first_accepted_s=state.first_accepted_s,
        device=device, timed=timed, note="" if (timed or device == "cuda") else CPU_NOTE,
        generations=state.generations, elapsed_s=round(elapsed, 3),
        candidates_per_minute=round(60 * state.usage.candidates / elapsed, 3) if elapsed > 0 else None,
        duplicates=state.duplicates, proposal_errors=state.proposal_errors, unpriced_models=sorted(state.unpriced),
        stop_reasons=[*previous, {"reason": reason, "started": started, "ended": ended,
                                  "replay_mismatches": state.replay_mismatches}],
        rejections=loop.rejections(),
    )
