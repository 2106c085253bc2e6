"""``/kernelevo`` commands in PR comments (``issue_comment`` created; edits never re-trigger).

What one comment can cost is bounded before any GitHub call: one command per comment, a (comment id,
action) is handled once whatever delivery id carries it, and commands are rate-limited per commenter and
per PR (:class:`~bot.context.BotContext`). A commenter who may not run commands (below the config's
``min_permission`` and not the PR's author) gets one reaction and nothing else: no status comment, no job.
"""

from __future__ import annotations

import logging

from bot import commands, context, trust
from bot.github_api import GitHubAPI
from bot.optimize import request_optimize
from bot.ratelimit import Deferred
from bot.report import code, escape_md
from bot.routing import Event, Router
from bot.state import CommentClaim
from workflows.models import CancelOutcome

log = logging.getLogger(__name__)
router = Router()

REFUSED = "-1"  # the one reaction an untrusted or rate-limited commenter gets


@router.register("issue_comment", action="created")
def on_comment_created(event: Event, gh: GitHubAPI, ctx: context.BotContext) -> None:
    """Parse the comment's command, acknowledge it, run it, update the status comment."""
    payload = event.payload
    issue, comment = payload["issue"], payload["comment"]
    if not issue.get("pull_request") or trust.is_bot(comment.get("user") or {}, ctx.bot_login):
        return
    parsed = commands.one_command(comment.get("body"))
    if parsed is None:
        return
    repo, number, login = event.repo, issue["number"], comment["user"]["login"]
    claim = ctx.state.claim_comment(repo, comment["id"], event.action or "created", event.delivery_id)
    if claim is CommentClaim.REPLAY:
        log.warning("comment %s on %s#%s was already handled (delivery %s is a replay)", comment["id"], repo,
                    number, event.delivery_id)
        return
    if claim is CommentClaim.NEW and not ctx.state.within_limit(f"user:{repo}:{login}", ctx.user_commands_per_window,
                                                                ctx.rate_window_s):
        _refuse_once(ctx, gh, repo, comment["id"], f"told:{repo}:{login}")
        return
    default_branch = payload["repository"].get("default_branch", "main")
    config, config_error = context.load_config(gh, repo, default_branch)
    permission = gh.permission(repo, login)
    author = (issue.get("user") or {}).get("login")
    if not trust.meets(permission, config.trigger.min_permission) and login != author:
        gh.react(repo, comment["id"], REFUSED)  # untrusted: one reaction, nothing written on the PR
        return
    if claim is CommentClaim.NEW and not ctx.state.within_limit(f"pr:{repo}#{number}", ctx.pr_commands_per_window,
                                                                ctx.rate_window_s):
        _refuse_once(ctx, gh, repo, comment["id"], f"told:{repo}#{number}:{login}")
        return
    gh.react(repo, comment["id"], "confused" if isinstance(parsed, commands.CommandError) else "+1")
    if isinstance(parsed, commands.CommandError):
        notice = (f"Nothing was run; the command could not be understood:\n- line {parsed.line}: {parsed.message}"
                  + "\n\n" + commands.help_text())
    elif config_error and parsed.name != "help":
        notice = config_error
    else:
        try:
            notice = run_command(ctx, gh, event, parsed, login, number, default_branch, permission=permission,
                                 author=author)
        except Deferred:
            raise  # the work queue runs the whole item again later
        except Exception as exc:  # say so on the PR instead of failing silently
            log.exception("command %s on %s#%s failed", parsed.name, repo, number)
            notice = (f"`{parsed.name}` failed: {escape_md(exc)}. Try again; if it keeps failing, "
                      "the bot's logs have the details.")
    context.refresh_status(ctx, gh, repo, number, notice)


def _refuse_once(ctx: context.BotContext, gh: GitHubAPI, repo: str, comment_id: int, name: str) -> None:
    """Over the rate limit: one reaction per window, then silence (no GitHub call at all)."""
    log.warning("rate limit: %s", name)
    if ctx.state.first_time(name, ctx.rate_window_s):
        gh.react(repo, comment_id, REFUSED)


def run_command(ctx: context.BotContext, gh: GitHubAPI, event: Event, command: commands.Command,
                login: str, number: int, default_branch: str, *, permission: str, author: str | None) -> str:
    """Carry out one well-formed command of a trusted commenter; returns what to tell the user."""
    repo = event.repo
    if command.name == "help":
        return commands.help_text()
    if command.name == "optimize":
        return request_optimize(ctx, gh, repo=repo, number=number, login=login, command=command,
                                installation_id=event.require_installation_id(), default_branch=default_branch)
    config, _ = context.load_config(gh, repo, default_branch)
    if command.name == "approve":
        return _approve(ctx, gh, event, command, login, number, default_branch, permission=permission,
                        minimum=config.trigger.min_permission)
    if not trust.meets(permission, config.trigger.min_permission):
        return (f"`{command.name}` needs `{config.trigger.min_permission}` permission on the repository "
                f"(the commenter has `{permission}`).")
    if command.name == "status":
        return "Status of this PR's jobs:"
    if command.name == "cancel":
        return _cancel(ctx, repo, number, command.ops)
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


def _approve(ctx: context.BotContext, gh: GitHubAPI, event: Event, command: commands.Command, login: str,
             number: int, default_branch: str, *, permission: str, minimum: str) -> str:
    """Approve the commit the approver named, if it is still the head and the approver is not the author."""
    repo = event.repo
    pull = gh.get_pull(repo, number)
    sha = pull["head"]["sha"]
    decision = trust.may_approve(approver=login, approver_permission=permission, author=pull["user"]["login"],
                                 minimum=minimum, head_sha=sha, named_sha=command.sha or "")
    if not decision.allowed:
        return f"Not approved: {decision.reason}."
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
