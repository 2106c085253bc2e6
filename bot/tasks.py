"""The ``bot`` queue's Celery tasks: what the worker tier tells the bot, and the bot's periodic work.

Task names are the contract with ``workflows.dispatch``: the search workers send :data:`BOT_PUBLISH_TASK`
when a job reached a terminal state and :data:`BOT_PROGRESS_TASK` when a chunk starts, each with the
job id only; everything else is read from the job store. The tasks are thin: they hand over to
:mod:`bot.jobflow`, :mod:`bot.reconcile` and :mod:`bot.sweep`. A GitHub rate limit longer than a call may
wait (:class:`~bot.ratelimit.Deferred`) retries the task after the wait GitHub asked for.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from bot.ratelimit import Deferred
from workflows.celery_app import app
from workflows.dispatch import BOT_PROGRESS_TASK, BOT_PUBLISH_TASK

if TYPE_CHECKING:
    from celery import Task

    from bot.context import BotContext

log = logging.getLogger(__name__)

BOT_RECONCILE_TASK = "kernelevo.bot.reconcile"  # (): make GitHub agree with the job records
BOT_SWEEP_TASK = "kernelevo.bot.sweep"  # (): sweep the repositories whose schedule is due
MAX_DEFERRALS = 8

_context: BotContext | None = None


def configure(ctx: BotContext) -> None:
    """Set the :class:`~bot.context.BotContext` the tasks use (``kernelevo bot-worker`` does, at start)."""
    global _context
    _context = ctx


def context() -> BotContext:
    if _context is None:
        raise RuntimeError("the bot tasks have no context: run them in `kernelevo bot-worker`")
    return _context


def _deferred(task: Any, exc: Deferred) -> Exception:
    log.warning("%s deferred: %s", task.name, exc)
    retry: Exception = task.retry(countdown=exc.wait_s, max_retries=MAX_DEFERRALS, exc=exc)
    return retry


@app.task(  # type: ignore[untyped-decorator]  # Celery has no type hints
    name=BOT_PUBLISH_TASK, bind=True, acks_late=True, ignore_result=True)
def publish(self: Task, job_id: str) -> str:
    """A job reached a terminal state: publish and report it (idempotent)."""
    from bot import jobflow
    from workflows.store import check_job_id

    try:
        return jobflow.publish_job(context(), check_job_id(job_id)).value
    except Deferred as exc:
        raise _deferred(self, exc) from None


@app.task(  # type: ignore[untyped-decorator]  # Celery has no type hints
    name=BOT_PROGRESS_TASK, bind=True, acks_late=True, ignore_result=True)
def report_progress(self: Task, job_id: str) -> None:
    """A job started or continued a chunk: update its check run (throttled)."""
    from bot import jobflow
    from workflows.store import check_job_id

    try:
        jobflow.report_progress(context(), check_job_id(job_id))
    except Deferred as exc:
        raise _deferred(self, exc) from None


@app.task(  # type: ignore[untyped-decorator]  # Celery has no type hints
    name=BOT_RECONCILE_TASK, bind=True, ignore_result=True)
def reconcile(self: Task) -> dict[str, Any]:
    from bot import reconcile as reconciling

    return reconciling.reconcile(context())


@app.task(  # type: ignore[untyped-decorator]  # Celery has no type hints
    name=BOT_SWEEP_TASK, bind=True, ignore_result=True)
def sweep(self: Task) -> dict[str, Any]:
    from bot import sweep as sweeping

    plans = sweeping.run_sweeps(context())
    return {repo: plan.enqueue if plan else None for repo, plan in plans.items()}
