"""Pull request events: list new and changed ops in a check run; cancel stale jobs on push/close."""

from __future__ import annotations

import logging

from bot import checks, commands, context, trust
from bot.github_api import GitHubAPI
from bot.optimize import request_optimize
from bot.routing import Event, Router
from bot.state import DiscoveryRun

log = logging.getLogger(__name__)
router = Router()


@router.register("pull_request", action="opened")
@router.register("pull_request", action="reopened")
@router.register("pull_request", action="synchronize")
def on_pull_updated(event: Event, gh: GitHubAPI, ctx: context.BotContext) -> None:
    """Discover the PR's added/changed ops and post them in one check run with an Optimize button."""
    pull, repo = event.payload["pull_request"], event.repo
    head_sha = pull["head"]["sha"]
    if event.action == "synchronize":
        cancel_stale(ctx, repo, pull["number"], head_sha)
    if not ctx.state.within_limit(f"discovery:{repo}#{pull['number']}", ctx.pr_commands_per_window,
                                  ctx.rate_window_s):
        log.warning("%s#%s: discovery skipped, more than %d pushes in %d s", repo, pull["number"],
                    ctx.pr_commands_per_window, ctx.rate_window_s)
        return  # each discovery downloads two checkouts: a burst of pushes must not cost that many
    default_branch = event.payload["repository"].get("default_branch", "main")
    config, config_error = context.load_config(gh, repo, default_branch)
    if config_error:
        gh.create_check_run(repo, name=checks.DISCOVERY_NAME, head_sha=head_sha, status="completed",
                            conclusion="action_required", output={"title": "Invalid KernelEvo config",
                                                                  "summary": config_error})
        return
    from kernelevo.discovery import diff_ops

    installation_id = event.require_installation_id()
    with ctx.workspace(installation_id, repo, pull["base"]["sha"]) as root:
        before = context.discover_at(root, config)
    with ctx.workspace(installation_id, repo, head_sha) as root:
        after = context.discover_at(root, config)
    diff = diff_ops(before, after)
    if not diff.added and not diff.changed:
        return
    run = gh.create_check_run(repo, name=checks.DISCOVERY_NAME, head_sha=head_sha, status="completed",
                              conclusion="neutral", output=checks.discovery_output(diff.added, diff.changed),
                              actions=checks.discovery_actions())
    ctx.state.add_discovery_run(run["id"], DiscoveryRun(repo=repo, pr_number=pull["number"]))
    author = pull["user"]["login"]
    if author in config.auto_run.trusted_authors and not trust.is_fork(pull):
        notice = request_optimize(ctx, gh, repo=repo, number=pull["number"], login=author,
                                  command=commands.Command("optimize"), installation_id=installation_id,
                                  default_branch=default_branch)
        context.refresh_status(ctx, gh, repo, pull["number"], f"Auto-run for {author}: {notice}")


@router.register("pull_request", action="closed")
def on_pull_closed(event: Event, gh: GitHubAPI, ctx: context.BotContext) -> None:
    """A closed PR needs no kernels: cancel its jobs and forget pending requests."""
    cancel_stale(ctx, event.repo, event.payload["pull_request"]["number"], None)


def cancel_stale(ctx: context.BotContext, repo: str, number: int, head_sha: str | None) -> list[str]:
    """Cancel (through the worker tier) the PR's live jobs for another commit than ``head_sha`` (None: all)."""
    cancelled = []
    for job_id in ctx.state.pull(repo, number).job_ids:
        record = ctx.jobs.get(job_id)
        if record is not None and not record.state.terminal and (head_sha is None
                                                                 or record.spec.commit_sha != head_sha):
            ctx.jobs.cancel(job_id)
            cancelled.append(job_id)
    ctx.state.pop_pending(repo, number)
    return cancelled
