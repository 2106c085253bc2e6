"""Turning "optimize this PR" (a comment, a check-run button, auto-run) into queued jobs.

One function decides and submits for every trigger, so the trust rules and the config's limits are
applied the same way whichever door the request came through; it returns the notice for the PR's
status comment. The PR's head is checked out once: its ops are found statically and the same files
are packed into the tarball the job carries to the workers.
"""

from __future__ import annotations

from pathlib import Path

from bot import archive_check, commands, context, jobspec, trust
from bot.github_api import GitHubAPI
from bot.report import code, escape_md
from bot.state import PendingRequest
from bot.submit import submit_request
from workflows.repo_tarball import pack_repo
from workflows.store import BlobError
from workflows.untar import TarballError


def request_optimize(ctx: context.BotContext, gh: GitHubAPI, *, repo: str, number: int, login: str,
                     command: commands.Command, installation_id: int, default_branch: str) -> str:
    """Check trust, find the ops, submit one job per op (at most :data:`bot.commands.MAX_OPS`, the rest named in
    the notice); returns the sentence to show on the PR."""
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
                             minimum=minimum, approved_sha=ctx.state.approved_sha(repo, number),
                             head_sha=head_sha)
    if not decision.allowed:
        if decision.pending_approval:
            ctx.state.set_pending(repo, number, PendingRequest(command=command, requested_by=login,
                                                               head_sha=head_sha))
        return f"Not started: {decision.reason}."
    settings = jobspec.job_settings(config, command, permission=commenter_perm,
                                    maintainer=config.trigger.maintainer_permission)

    with ctx.workspace(installation_id, repo, pull["base"]["sha"]) as base_root:
        before = context.discover_at(base_root, config)
    with ctx.workspace(installation_id, repo, head_sha) as head_root:
        changed = _not_the_commit(gh, repo, head_sha, head_root)
        if changed:
            return changed
        after = context.discover_at(head_root, config)
        known = sorted(after)
        if command.ops:
            ops, unknown = commands.resolve_ops(command.ops, known)
            if unknown:
                return "Not started: " + commands.unknown_ops_message(unknown, known) + "."
        else:
            from kernelevo.discovery import diff_ops

            diff = diff_ops(before, after)
            ops = diff.added + diff.changed
            if not ops:
                listing = ", ".join(code(k) for k in known[:20]) or "none"
                return ("Not started: this PR adds or changes no annotated ops. Name the ops to optimize, "
                        f"e.g. `/kernelevo optimize OP`; ops in this PR: {listing}.")
        ops, left_out = ops[:commands.MAX_OPS], ops[commands.MAX_OPS:]
        try:
            tarball = pack_repo(head_root, max_unpacked_bytes=ctx.max_unpacked_bytes, max_files=ctx.max_files)
        except TarballError as exc:
            return f"Not started: the PR's files cannot be sent to the workers: {escape_md(exc)}."
    try:
        source = ctx.jobs.upload_repo(tarball)
    except BlobError as exc:
        return f"Not started: {escape_md(exc)}."
    origin = jobspec.pr_origin(requested_by=login, installation_id=installation_id, pr_number=number,
                               base_ref=context.follow_up_base(pull))
    done = submit_request(ctx, gh, repo=repo, installation_id=installation_id, pr_number=number, head_sha=head_sha,
                          ops=ops, settings=settings, source=source, origin=origin, fork=trust.is_fork(pull))
    parts = []
    if done.jobs:
        listing = ", ".join(f"{code(op)} as {job}" for op, job in done.jobs.items())
        parts.append(f"Queued {len(done.jobs)} job(s) on commit {head_sha[:12]} (backend {settings.backend}): "
                     f"{listing}.")
    if done.existing:
        listing = ", ".join(f"{code(op)} ({r.id}, {r.state.value})" for op, r in done.existing.items())
        parts.append(f"Already requested for this commit: {listing}.")
    if left_out:
        parts.append(not_queued_notice(left_out))
    parts += [f"Note: {note}." for note in settings.notes]
    return " ".join(parts)


def _not_the_commit(gh: GitHubAPI, repo: str, sha: str, root: Path) -> str | None:
    """Why the checkout of ``sha`` (GitHub's archive) is not the commit's files, as the PR's notice; None when it
    is (:mod:`bot.archive_check`)."""
    try:
        found = archive_check.differences(root, archive_check.tree_entries(gh.commit_files(repo, sha)))
    except LookupError as exc:
        return f"Not started: {escape_md(exc)}; the checkout cannot be compared with the commit."
    if not found:
        return None
    listing = "; ".join(code(line) for line in found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    return (f"Not started: GitHub's archive of commit {sha[:12]} is not the commit's files ({listing}). git archive "
            "applies the commit's `.gitattributes`: `export-subst` rewrites files and `export-ignore` leaves them "
            "out, so what would run is not what was reviewed. Remove those attributes and push again.")


def not_queued_notice(left_out: list[str], shown: int = 20) -> str:
    """What a request past :data:`bot.commands.MAX_OPS` ops did not queue, and the command that queues them."""
    listing = ", ".join(code(op) for op in left_out[:shown])
    more = f" and {len(left_out) - shown} more" if len(left_out) > shown else ""
    return (f"Not queued: {len(left_out)} more op(s) ({listing}{more}): one request queues at most "
            f"{commands.MAX_OPS} jobs. Name the ops to optimize them, e.g. "
            f"{code('/kernelevo optimize ' + ' '.join(left_out[:commands.MAX_OPS]))}.")
