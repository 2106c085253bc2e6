"""Submitting an optimize request to the worker tier: one job per op, one check run for the request.

Order matters for restarts: the check run and its :class:`~bot.state.RunLink` are stored first, each
job's spec is bound to the run before it is submitted (so a job that finishes before it is linked still
finds its run), then the job is submitted, linked and listed as open (so reconciling after a crash
reports it). The repository travels as a content-addressed tarball: workers never see a GitHub token.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from bot import checks, context, jobflow
from bot.github_api import GitHubAPI
from bot.jobspec import JobSettings, build_spec
from bot.report import escape_md
from bot.state import Conclusion, OpenJob, OpLine, RunLink
from workflows.models import JobRecord, JobSpec, JobState, Origin, RepoSource


@dataclass(frozen=True)
class Submitted:
    """What a request queued: the new jobs by op, the ops already covered by a live or finished job."""

    run_id: int | None
    jobs: dict[str, str]
    existing: dict[str, JobRecord]


def live_duplicate(ctx: context.BotContext, spec: JobSpec) -> JobRecord | None:
    """The job an identical earlier request made, unless it failed or was cancelled (the store would
    return it from ``submit``; asking first avoids a check run with nothing to report)."""
    run_id = ctx.state.run_for(spec.idempotency_key())
    run = ctx.state.run(run_id) if run_id is not None else None
    line = run.line(spec.op_id) if run else None
    if line is None or line.job_id is None:
        return None
    record = ctx.jobs.get(line.job_id)
    if record is None or record.state in (JobState.FAILED, JobState.CANCELLED):
        return None
    return record


def submit_request(ctx: context.BotContext, gh: GitHubAPI, *, repo: str, installation_id: int,
                   pr_number: int | None, head_sha: str, ops: list[str], settings: JobSettings, source: RepoSource,
                   origin: Origin, fork: bool = False) -> Submitted:
    """Queue one job per op of a request and create the request's check run (none when nothing is new)."""
    specs = {op: build_spec(settings, repo=repo, commit_sha=head_sha, op_id=op, source=source, device=ctx.device,
                            origin=origin) for op in ops}
    existing = {op: record for op, spec in specs.items() if (record := live_duplicate(ctx, spec)) is not None}
    new = [op for op in ops if op not in existing]
    if not new:
        return Submitted(None, {}, existing)
    run_id = checks.start_run(gh, repo, head_sha, new)
    ctx.state.put_run(RunLink(check_run_id=run_id, repo=repo, installation_id=installation_id, pr_number=pr_number,
                              head_sha=head_sha, fork=fork, ops=[OpLine(op_id=op) for op in new]))
    jobs: dict[str, str] = {}
    try:
        for op in new:
            spec = specs[op]
            ctx.state.bind_run(spec.idempotency_key(), run_id)
            outcome = ctx.jobs.submit(spec)
            job_id = outcome.record.id
            if not outcome.created:  # an identical request (concurrent, or finished) has the job: not queued now
                existing[op] = outcome.record
                if outcome.record.links.check_run_id is not None:
                    ctx.state.bind_run(spec.idempotency_key(), outcome.record.links.check_run_id)
                jobflow.set_outcome(ctx, run_id, op, None, jobflow.Outcome(
                    f"already requested as {job_id}; see its check run", Conclusion.NEUTRAL))
                continue
            jobs[op] = job_id
            ctx.state.add_open_job(OpenJob(job_id=job_id, op_id=op, repo=repo, installation_id=installation_id,
                                           pr_number=pr_number, check_run_id=run_id))
            status_comment = ctx.state.pull(repo, pr_number).status_comment_id if pr_number is not None else None
            ctx.jobs.update(job_id, partial(_with_links, run_id=run_id, status_comment_id=status_comment))
            ctx.state.update_run(run_id, partial(_link, op=op, job_id=job_id))
            if pr_number is not None:
                ctx.state.add_pull_jobs(repo, pr_number, [job_id])
    except Exception as exc:  # say on the run which ops were not queued, then let the caller tell the PR
        for op in new:
            if op not in jobs and op not in existing:
                jobflow.set_outcome(ctx, run_id, op, None, jobflow.Outcome(
                    f"not queued: {escape_md(exc)}", Conclusion.FAILURE))
        raise
    finally:  # what was not submitted is reported as lost by the next reconcile, never left queued
        ctx.state.update_run(run_id, lambda r: r.model_copy(update={"submitted": True}))
        jobflow.refresh_run(ctx, run_id)
    return Submitted(run_id, jobs, existing)


def _with_links(record: JobRecord, run_id: int, status_comment_id: int | None) -> JobRecord:
    links = record.links.model_copy(update={"check_run_id": run_id,
                                            "status_comment_id": status_comment_id or record.links.status_comment_id})
    return record.model_copy(update={"links": links})


def _link(run: RunLink, op: str, job_id: str) -> RunLink:
    line = run.line(op)
    if line is not None and line.job_id is None:
        line.job_id = job_id
    return run
