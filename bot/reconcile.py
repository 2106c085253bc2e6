"""After a restart (and every tick): make GitHub agree with the job records, so no check run stays open.

For each job the bot submitted and has not reported: finished -> publish it (``jobflow.publish_job``, which
does nothing twice); still queued or running -> it goes on (the worker tier's reaper re-queues jobs whose
worker died), so only its progress is refreshed; gone from the store -> its op's line fails saying why.
For each open check run: ops that never got a job (the bot stopped while submitting) fail saying so,
and a run whose every op is reported is completed. :func:`plan_job` and :func:`lost_lines` decide; the
rest is I/O.
"""

from __future__ import annotations

import enum
import logging
from datetime import datetime, timedelta

from bot import context, jobflow
from bot.state import Conclusion, OpenJob, RunLink
from workflows.models import JobRecord, utcnow

log = logging.getLogger(__name__)

SUBMIT_GRACE = timedelta(minutes=10)  # a run still being submitted by a live process is left alone this long


class JobAction(str, enum.Enum):
    PUBLISH = "publish"
    PROGRESS = "progress"
    FORGET = "forget"  # reported already: drop it from the open jobs
    LOST = "lost"  # no record: its line fails


def plan_job(record: JobRecord | None) -> JobAction:
    if record is None:
        return JobAction.LOST
    if record.published:
        return JobAction.FORGET
    if record.state.terminal:
        return JobAction.PUBLISH
    return JobAction.PROGRESS


def lost_lines(run: RunLink, now: datetime) -> list[str]:
    """Ops of ``run`` that will never get a job: submission finished (or was abandoned) without one."""
    if not run.submitted and now - run.created_at < SUBMIT_GRACE:
        return []
    return [line.op_id for line in run.ops if line.job_id is None and line.outcome is None]


def reconcile(ctx: context.BotContext, now: datetime | None = None) -> dict[str, int]:
    """One pass over the open jobs and check runs; returns how many of each action were taken."""
    now = now or utcnow()
    counts: dict[str, int] = {}
    for job in ctx.state.open_jobs():
        try:
            action = reconcile_job(ctx, job)
        except Exception:
            log.exception("reconcile: job %s", job.job_id)
            continue
        counts[action.value] = counts.get(action.value, 0) + 1
    for run_id in ctx.state.open_runs():
        try:
            reconcile_run(ctx, run_id, now)
        except Exception:
            log.exception("reconcile: check run %s", run_id)
        counts["runs"] = counts.get("runs", 0) + 1
    return counts


def reconcile_job(ctx: context.BotContext, job: OpenJob) -> JobAction:
    record = ctx.jobs.get(job.job_id)
    action = plan_job(record)
    if action is JobAction.PUBLISH:
        jobflow.publish_job(ctx, job.job_id)
    elif action is JobAction.PROGRESS:
        jobflow.report_progress(ctx, job.job_id)
    elif action is JobAction.FORGET:
        ctx.state.discard_open_job(job.job_id)
    else:
        if job.check_run_id is not None:
            jobflow.set_outcome(ctx, job.check_run_id, job.op_id, job.job_id, jobflow.missing_outcome(job.job_id))
            jobflow.refresh_run(ctx, job.check_run_id)
        ctx.state.discard_open_job(job.job_id)
        log.warning("reconcile: job %s (%s) no longer exists; its check run line failed", job.job_id, job.op_id)
    return action


def reconcile_run(ctx: context.BotContext, run_id: int, now: datetime) -> None:
    run = ctx.state.run(run_id)
    if run is None:
        ctx.state.close_run(run_id)
        return
    lost = lost_lines(run, now)
    for op_id in lost:
        jobflow.set_outcome(ctx, run_id, op_id, None, jobflow.Outcome(
            "failed: the bot stopped before this op's job was queued; comment `/kernelevo optimize` again",
            Conclusion.FAILURE))
    for line in run.ops:  # a job that is gone and was never listed as open (submitted, then the bot died)
        if line.job_id is not None and line.outcome is None and ctx.jobs.get(line.job_id) is None:
            jobflow.set_outcome(ctx, run_id, line.op_id, line.job_id, jobflow.missing_outcome(line.job_id))
    if not run.submitted and lost:
        ctx.state.update_run(run_id, lambda r: r.model_copy(update={"submitted": True}))
    jobflow.refresh_run(ctx, run_id)
