"""Scheduled sweeps: on a repository's ``sweep.schedule`` (cron, UTC), search the default branch's ops
whose kernels are missing or stale, a bounded number at a time and within ``max_open_prs``.

:func:`sweep_due` and :func:`plan_sweep` decide (pure); :func:`run_sweep` reads GitHub and Redis and
submits. A kernel is stale when the op's source hash differs from the one in its
``kernels/<op>/manifest.json`` (read as JSON by the kernel store; nothing is imported). One sweep of a
repository runs at a time (a Redis lock), and a scheduler turn in Redis makes one bot worker of many
start the sweeps each tick (``bot.worker``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from bot import context, jobspec, publish
from bot.commands import Command
from bot.state import OpenJob, SweepState
from workflows.models import utcnow

log = logging.getLogger(__name__)

MAX_SWEEP_JOBS = 4  # jobs one sweep of one repository may enqueue


def sweep_due(schedule: str, last_run_at: datetime, now: datetime) -> bool:
    """Whether a cron fire time passed since the last sweep."""
    from croniter import croniter

    fire: datetime = croniter(schedule, last_run_at).get_next(datetime)
    return fire <= now


@dataclass(frozen=True)
class SweepPlan:
    """The ops to enqueue (missing kernels first, then stale ones) and those left for a later sweep."""

    enqueue: list[str]
    reasons: dict[str, str] = field(default_factory=dict)  # op -> "missing" | "stale"
    deferred: list[str] = field(default_factory=list)


def plan_sweep(ops: dict[str, str], kernels: dict[str, str], *, open_prs: int, max_open_prs: int,
               in_flight: set[str], max_jobs: int = MAX_SWEEP_JOBS) -> SweepPlan:
    """``ops``/``kernels``: op id -> source hash at the default branch / in the stored manifests.
    ``in_flight``: ops whose sweep job is still live (they are neither queued again nor forgotten:
    each may still open a PR, so it counts against ``max_open_prs``)."""
    missing = sorted(op for op in ops if op not in kernels and op not in in_flight)
    stale = sorted(op for op in ops if op in kernels and kernels[op] != ops[op] and op not in in_flight)
    wanted = missing + stale
    room = max(0, min(max_jobs, max_open_prs - open_prs - len(in_flight)))
    reasons = {op: "missing" for op in missing} | {op: "stale" for op in stale}
    return SweepPlan(enqueue=wanted[:room], reasons={op: reasons[op] for op in wanted[:room]}, deferred=wanted[room:])


def run_sweeps(ctx: context.BotContext, now: datetime | None = None) -> dict[str, SweepPlan | None]:
    """Sweep every installed repository that is due; returns each repository's plan (None: not swept)."""
    now = now or utcnow()
    plans: dict[str, SweepPlan | None] = {}
    for repo, installation_id in sorted(ctx.state.installations().items()):
        try:
            plans[repo] = run_sweep(ctx, repo, installation_id, now)
        except Exception:
            log.exception("sweep of %s failed", repo)
            plans[repo] = None
    return plans


def run_sweep(ctx: context.BotContext, repo: str, installation_id: int, now: datetime) -> SweepPlan | None:
    """Sweep ``repo`` if its schedule is due (the first time a schedule is seen only starts its clock)."""
    from kernelevo.kernel_store import find_kernels
    from workflows.repo_tarball import pack_repo

    gh = ctx.github(installation_id)
    default_branch = gh.get_repo(repo).get("default_branch", "main")
    config, error = context.load_config(gh, repo, default_branch)
    schedule = config.sweep.schedule
    if error or not schedule:
        return None
    state = ctx.state.sweep_state(repo)
    if state is None:
        ctx.state.set_sweep_state(repo, SweepState(last_run_at=now))
        return None
    if not sweep_due(schedule, state.last_run_at, now):
        return None
    with ctx.state.lock(f"sweep:{repo}", timeout_s=900, wait_s=0) as got:
        if not got:
            return None
        sha = gh.branch_sha(repo, default_branch)
        if sha is None:
            return None
        with ctx.workspace(installation_id, repo, sha) as root:
            ops = context.discover_at(root, config)
            kernels = {k.op_id: k.source_hash for k in find_kernels(root)}
            tarball = pack_repo(root, max_unpacked_bytes=ctx.max_unpacked_bytes, max_files=ctx.max_files)
        live = [r for r in (ctx.jobs.get(j) for j in state.job_ids) if r is not None and not r.state.terminal]
        open_prs = publish.count_open_kernel_prs(gh.list_pulls(repo, state="open"), repo)
        plan = plan_sweep(ops, kernels, open_prs=open_prs, max_open_prs=config.max_open_prs,
                          in_flight={r.spec.op_id for r in live})
        job_ids = [r.id for r in live]
        if plan.enqueue:
            source = ctx.jobs.upload_repo(tarball)
            settings = jobspec.job_settings(config, Command("optimize"), permission="none")
            origin = jobspec.sweep_origin(installation_id=installation_id, base_ref=default_branch)
            for op in plan.enqueue:
                spec = jobspec.build_spec(settings, repo=repo, commit_sha=sha, op_id=op, source=source,
                                          device=ctx.device, origin=origin)
                record = ctx.jobs.submit(spec).record
                ctx.state.add_open_job(OpenJob(job_id=record.id, op_id=op, repo=repo,
                                               installation_id=installation_id))
                job_ids.append(record.id)
        ctx.state.set_sweep_state(repo, SweepState(last_run_at=now, commit_sha=sha, job_ids=job_ids))
        log.info("sweep of %s at %s: queued %s, left %s", repo, sha[:12], plan.enqueue, plan.deferred)
        return plan
