"""Pull request events: list new and changed ops in a check run; cancel stale jobs on push/close."""

from __future__ import annotations

from bot import checks, commands, context, trust
from bot.github_api import GitHubAPI
from bot.optimize import request_optimize
from bot.routing import Event, Router
from kernelevo.jobs import TERMINAL

router = Router()


@router.register("pull_request", action="opened")
@router.register("pull_request", action="reopened")
@router.register("pull_request", action="synchronize")
def on_pull_updated(event: Event, gh: GitHubAPI, ctx: context.BotContext) -> None:
    """Discover the PR's added/changed ops and post them in one check run with an Optimize button."""
    pull, repo = event.payload["pull_request"], event.repo
    head_sha = pull["head"]["sha"]
    if event.action == "synchronize":
        _cancel_stale(ctx, repo, pull["number"], head_sha)
    default_branch = event.payload["repository"].get("default_branch", "main")
    config, config_error = context.load_config(gh, repo, default_branch)
    if config_error:
        gh.create_check_run(repo, name=checks.DISCOVERY_NAME, head_sha=head_sha, status="completed",
                            conclusion="action_required", output={"title": "Invalid KernelEvo config",
                                                                  "summary": config_error})
        return
    added, changed, _ = context.changed_ops(ctx, repo, pull["base"]["sha"], head_sha, config)
    if not added and not changed:
        return
    run = gh.create_check_run(repo, name=checks.DISCOVERY_NAME, head_sha=head_sha, status="completed",
                              conclusion="neutral", output=checks.discovery_output(added, changed),
                              actions=checks.discovery_actions())
    with ctx.lock:
        ctx.discovery_runs[run["id"]] = (repo, pull["number"])
    author = pull["user"]["login"]
    if author in config.auto_run.trusted_authors and not trust.is_fork(pull):
        notice = request_optimize(ctx, gh, repo=repo, number=pull["number"], login=author,
                                  command=commands.Command("optimize"), installation_id=event.installation_id,
                                  default_branch=default_branch)
        context.refresh_status(ctx, gh, repo, pull["number"], f"Auto-run for {author}: {notice}")


@router.register("pull_request", action="closed")
def on_pull_closed(event: Event, gh: GitHubAPI, ctx: context.BotContext) -> None:
    """A closed PR needs no kernels: cancel its jobs and forget pending requests."""
    pull = event.payload["pull_request"]
    _cancel_stale(ctx, event.repo, pull["number"], None)


def _cancel_stale(ctx: context.BotContext, repo: str, number: int, head_sha: str | None) -> None:
    for job in ctx.jobs.find(repo, number):
        if job.state not in TERMINAL and (head_sha is None or job.request.head_sha != head_sha):
            ctx.jobs.cancel(job.job_id)
    with ctx.lock:
        ctx.pending.pop((repo, number), None)
