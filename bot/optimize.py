"""Turning "optimize this PR" (a comment, a check-run button, auto-run) into a queued job.

One function decides and submits for every trigger, so the trust rules are applied the same way
whichever door the request came through; it returns the notice for the PR's status comment.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot import commands, context, trust
from bot.github_api import GitHubAPI
from bot.report import code
from kernelevo.jobs import JobRequest


@dataclass(frozen=True)
class Pending:
    """An optimize request waiting for a maintainer's approval of the PR's head SHA."""

    command: commands.Command
    requested_by: str


def request_optimize(ctx: context.BotContext, gh: GitHubAPI, *, repo: str, number: int, login: str,
                     command: commands.Command, installation_id: int, default_branch: str) -> str:
    """Check trust, find the ops, submit the job; returns the sentence to show on the PR."""
    pull = gh.get_pull(repo, number)
    if pull.get("state") != "open":
        return "This PR is closed; nothing was queued."
    config, config_error = context.load_config(gh, repo, default_branch)
    if config_error:
        return config_error
    minimum = config.trigger.min_permission
    author = pull["user"]["login"]
    commenter_perm = gh.permission(repo, login)
    author_perm = commenter_perm if author == login else gh.permission(repo, author)
    head_sha = pull["head"]["sha"]
    decision = trust.may_run(fork=trust.is_fork(pull), author_permission=author_perm,
                             commenter_permission=commenter_perm, commenter_is_author=author == login,
                             minimum=minimum, approved_sha=ctx.approvals.approved_sha(repo, number),
                             head_sha=head_sha)
    if not decision.allowed:
        if decision.pending_approval:
            with ctx.lock:
                ctx.pending[(repo, number)] = Pending(command, login)
        return f"Not started: {decision.reason}."
    added, changed, known = context.changed_ops(ctx, repo, pull["base"]["sha"], head_sha, config)
    if command.ops:
        ops, unknown = commands.resolve_ops(command.ops, known)
        if unknown:
            return "Not started: " + commands.unknown_ops_message(unknown, known) + "."
    else:
        ops = added + changed
        if not ops:
            listing = ", ".join(code(k) for k in known[:20]) or "none"
            return ("Not started: this PR adds or changes no annotated ops. Name the ops to optimize, "
                    f"e.g. `/kernelevo optimize OP`; ops in this PR: {listing}.")
    request = JobRequest(
        repo=repo, pr_number=number, head_sha=head_sha, base_ref=context.follow_up_base(pull), ops=ops,
        backend=context.backend_for(command.backend, config),
        budget_tokens=command.budget if command.budget is not None else config.budgets.tokens,
        model=command.model or config.model, requested_by=login, installation_id=installation_id, kind="pr",
    )
    job_id = context.submit_job(ctx, gh, request, fork=trust.is_fork(pull))
    return (f"Queued {job_id} for {len(ops)} op(s) on commit {head_sha[:12]} "
            f"(backend {request.backend}).")
