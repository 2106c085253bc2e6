"""Check-run buttons: "Optimize" on the ops check run starts the same jobs a comment would."""

from __future__ import annotations

from bot import checks, commands, context
from bot.github_api import GitHubAPI
from bot.optimize import request_optimize
from bot.routing import Event, Router

router = Router()


@router.register("check_run", action="requested_action")
def on_requested_action(event: Event, gh: GitHubAPI, ctx: context.BotContext) -> None:
    """Map the check run back to its PR (by id, stored in Redis; ``pull_requests`` is empty for forks)."""
    payload = event.payload
    if (payload.get("requested_action") or {}).get("identifier") != checks.OPTIMIZE_ACTION:
        return
    run = payload["check_run"]
    found = ctx.state.discovery_run(run["id"])
    target = (found.repo, found.pr_number) if found is not None else None
    if target is None and run.get("pull_requests"):
        target = (event.repo, run["pull_requests"][0]["number"])
    if target is None or target[0] != event.repo:
        return  # not a run this bot made: the button can be pressed again on a new one
    repo, number = target
    login = payload["sender"]["login"]
    if not ctx.state.within_limit(f"user:{repo}:{login}", ctx.user_commands_per_window, ctx.rate_window_s):
        return  # the same allowance as the commenter's: a button cannot be pressed past it
    notice = request_optimize(ctx, gh, repo=repo, number=number, login=login,
                              command=commands.Command("optimize"), installation_id=event.require_installation_id(),
                              default_branch=payload["repository"].get("default_branch", "main"))
    context.refresh_status(ctx, gh, repo, number, notice)
