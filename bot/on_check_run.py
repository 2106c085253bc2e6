"""Check-run buttons: "Optimize" on the ops check run starts the same job a comment would."""

from __future__ import annotations

from bot import checks, commands, context
from bot.github_api import GitHubAPI
from bot.optimize import request_optimize
from bot.routing import Event, Router

router = Router()


@router.register("check_run", action="requested_action")
def on_requested_action(event: Event, gh: GitHubAPI, ctx: context.BotContext) -> None:
    """Map the check run back to its PR (by id; ``pull_requests`` is empty for forks) and optimize."""
    payload = event.payload
    if (payload.get("requested_action") or {}).get("identifier") != checks.OPTIMIZE_ACTION:
        return
    run = payload["check_run"]
    with ctx.lock:
        target = ctx.discovery_runs.get(run["id"])
    if target is None and run.get("pull_requests"):
        target = (event.repo, run["pull_requests"][0]["number"])
    if target is None:
        return  # not a run this bot knows (or it restarted): the button can be pressed again later
    repo, number = target
    notice = request_optimize(ctx, gh, repo=repo, number=number, login=payload["sender"]["login"],
                              command=commands.Command("optimize"), installation_id=event.installation_id,
                              default_branch=payload["repository"].get("default_branch", "main"))
    context.refresh_status(ctx, gh, repo, number, notice)
