"""``/kernelevo`` commands in PR comments (``issue_comment`` created; edits never re-trigger)."""

from __future__ import annotations

import logging

from bot import commands, context, trust
from bot.github_api import GitHubAPI
from bot.optimize import request_optimize
from bot.ratelimit import Deferred
from bot.report import code, escape_md
from bot.routing import Event, Router
from workflows.models import CancelOutcome

log = logging.getLogger(__name__)
router = Router()


@router.register("issue_comment", action="created")
def on_comment_created(event: Event, gh: GitHubAPI, ctx: context.BotContext) -> None:
    """Parse the comment's commands, acknowledge at once, run them, update the status comment."""
    payload = event.payload
    issue, comment = payload["issue"], payload["comment"]
    if not issue.get("pull_request") or trust.is_bot(comment.get("user") or {}, ctx.bot_login):
        return
    parsed = commands.parse_comment(comment.get("body"))
    if not parsed:
        return
    repo, number, login = event.repo, issue["number"], comment["user"]["login"]
    errors = [c for c in parsed if isinstance(c, commands.CommandError)]
    gh.react(repo, comment["id"], "confused" if errors else "+1")
    if errors:
        lines = [f"- line {e.line}: {e.message}" for e in errors]
        notice = ("Nothing was run; the command could not be understood:\n" + "\n".join(lines)
                  + "\n\n" + commands.help_text())
        context.refresh_status(ctx, gh, repo, number, notice)
        return
    default_branch = payload["repository"].get("default_branch", "main")
    notices: list[str] = []
    for command in [c for c in parsed if isinstance(c, commands.Command)]:  # all of them (errors returned above)
        try:
            notices.append(run_command(ctx, gh, event, command, login, number, default_branch))
        except Deferred:
            raise  # the work queue runs the whole item again later
        except Exception as exc:  # say so on the PR instead of failing silently
            log.exception("command %s on %s#%s failed", command.name, repo, number)
            notices.append(f"`{command.name}` failed: {escape_md(exc)}. Try again; if it keeps failing, "
                           "the bot's logs have the details.")
    context.refresh_status(ctx, gh, repo, number, "\n\n".join(n for n in notices if n))


def run_command(ctx: context.BotContext, gh: GitHubAPI, event: Event, command: commands.Command,
                login: str, number: int, default_branch: str) -> str:
    """Carry out one well-formed command; returns what to tell the user."""
    repo = event.repo
    if command.name == "help":
        return commands.help_text()
    if command.name == "optimize":
        return request_optimize(ctx, gh, repo=repo, number=number, login=login, command=command,
                                installation_id=event.require_installation_id(), default_branch=default_branch)
    config, config_error = context.load_config(gh, repo, default_branch)
    if config_error:
        return config_error
    permission = gh.permission(repo, login)
    if not trust.meets(permission, config.trigger.min_permission):
        return (f"`{command.name}` needs `{config.trigger.min_permission}` permission on the repository "
                f"(the commenter has `{permission}`).")
    if command.name == "status":
        return "Status of this PR's jobs:"
    if command.name == "cancel":
        return _cancel(ctx, repo, number, command.ops)
    if command.name == "approve":
        return _approve(ctx, gh, event, repo, number, login, default_branch)
    return commands.help_text()


def _cancel(ctx: context.BotContext, repo: str, number: int, ops: list[str]) -> str:
    """Cooperative cancel through the worker tier: a queued job stops at once, a running one at its next
    candidate boundary; either way the worker reports it back and the bot completes its check run."""
    asked = []
    for job_id in ctx.state.pull(repo, number).job_ids:
        record = ctx.jobs.get(job_id)
        if record is None or record.state.terminal:
            continue
        if ops and not commands.resolve_ops(ops, [record.spec.op_id])[0]:
            continue
        outcome, _ = ctx.jobs.cancel(job_id)
        if outcome in (CancelOutcome.CANCELLED, CancelOutcome.REQUESTED):
            asked.append(f"{code(record.spec.op_id)} ({job_id}: {outcome.value})")
    ctx.state.pop_pending(repo, number)
    if not asked:
        return "No running job matched; nothing cancelled."
    return f"Cancel asked for {len(asked)} job(s): {', '.join(asked)}."


def _approve(ctx: context.BotContext, gh: GitHubAPI, event: Event, repo: str, number: int, login: str,
             default_branch: str) -> str:
    sha = gh.get_pull(repo, number)["head"]["sha"]
    ctx.state.approve(repo, number, sha, login)
    notice = (f"Approved commit {sha[:12]} for KernelEvo jobs (by {login}). "
              "A new push needs a new approval.")
    pending = ctx.state.pop_pending(repo, number)
    if pending is not None:
        started = request_optimize(ctx, gh, repo=repo, number=number, login=pending.requested_by,
                                   command=pending.command, installation_id=event.require_installation_id(),
                                   default_branch=default_branch)
        notice += "\n\nThe waiting request: " + started
    return notice
