"""What every handler and bot task gets besides the event, plus the shared PR helpers.

:class:`BotContext` carries the worker tier's :class:`~workflows.client.JobsClient`, the Redis-backed
:class:`~bot.state.BotState`, the GitHub client factory, the workspace provider (checkouts by SHA, for
static discovery only) and the clock. Nothing in it lives only in memory that a restart would lose.
The helpers (repo config, discovery, the status comment) are used by several routers and tasks.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot import comments
from bot.github_api import GitHubAPI
from bot.state import BotState, RunLink
from kernelevo.repo_config import CONFIG_PATH, RepoConfig, RepoConfigError, load_repo_config
from kernelevo.settings import get_settings

if TYPE_CHECKING:  # annotations only: importing this module stays as light as before
    from bot.workqueue import WorkQueue
    from workflows.client import JobsClient

log = logging.getLogger(__name__)

# (installation id, repo, sha) -> a context manager yielding a local checkout of that commit
WorkspaceProvider = Callable[[int, str, str], AbstractContextManager[Path]]


@dataclass
class BotContext:
    """Dependencies shared by the routers (web process) and the bot-queue tasks (bot worker)."""

    github: Callable[[int], GitHubAPI]
    jobs: JobsClient
    state: BotState
    workspace: WorkspaceProvider
    work: WorkQueue | None = None  # in the web process; None in the bot worker
    clock: Callable[[], float] = time.time
    bot_login: str = "kernelevo[bot]"
    progress_interval_s: float = 60.0
    device: str = "cuda"  # where the bot's jobs run: cuda (GPU workers) or cpu (Triton's interpreter)
    max_unpacked_bytes: int = 512 * 2**20
    max_files: int = 50_000
    forget_installation: Callable[[int], None] | None = None
    # Commands per window (``rate_window_s``): per commenter and repository (every comment counts, trusted or
    # not) and per PR (commands of trusted commenters, so strangers cannot use up a PR's allowance). Unless
    # given, from the settings (KERNELEVO_BOT_USER_COMMANDS_PER_WINDOW, ..._PR_COMMANDS_PER_WINDOW, ..._RATE_WINDOW_S).
    user_commands_per_window: int = field(default_factory=lambda: get_settings().bot_user_commands_per_window)
    pr_commands_per_window: int = field(default_factory=lambda: get_settings().bot_pr_commands_per_window)
    rate_window_s: int = field(default_factory=lambda: get_settings().bot_rate_window_s)

    @property
    def approvals(self) -> BotState:
        return self.state


def load_config(gh: GitHubAPI, repo: str, ref: str) -> tuple[RepoConfig, str | None]:
    """The repo's ``.github/kernelevo.yml`` at ``ref`` (the trusted default branch, never a PR head).

    Returns defaults when the file is absent, and defaults plus the error text when it is invalid.
    """
    text = gh.read_file(repo, CONFIG_PATH, ref)
    if text is None:
        return RepoConfig(), None
    try:
        return load_repo_config(text), None
    except RepoConfigError as exc:
        from bot.report import code

        # each problem quotes the file (keys, values): shown as code spans, never as Markdown or mentions
        problems = "\n".join(f"- {code(problem)}" for problem in exc.problems[:20])
        return RepoConfig(), (f"`{CONFIG_PATH}` on {code(ref)} is invalid, so nothing runs until it is fixed:\n"
                              f"{problems}")


def discover_at(root: Path, config: RepoConfig) -> dict[str, str]:
    """``{op_id: source_hash}`` of a checkout, by static discovery (never imports repository code).

    Ops whose id is not a plain path and qualname (:func:`kernelevo.kernel_store.is_safe_op_id`) are left
    out: their id would reach generated files, branch names and Markdown."""
    from kernelevo.discovery import discover
    from kernelevo.kernel_store import is_safe_op_id

    found = discover(root, config.paths.include, config.paths.exclude).hashes()
    unsafe = [op for op in found if not is_safe_op_id(op)]
    if unsafe:
        log.warning("%s: %d op(s) with unsafe ids left out (path characters outside [A-Za-z0-9_./-]): %r",
                    root.name, len(unsafe), unsafe[:5])
    return {op: digest for op, digest in found.items() if op not in unsafe}


def follow_up_base(pull: dict[str, Any]) -> str:
    """Branch the follow-up PR targets: the PR's head branch, or its base branch for fork PRs."""
    from bot import trust

    return str(pull["base"]["ref"] if trust.is_fork(pull) else pull["head"]["ref"])


def job_rows(ctx: BotContext, job_ids: list[str]) -> list[dict[str, Any]]:
    """The status comment's rows: one per op job, with its state and outcome (or error)."""
    from bot.report import code, escape_md

    rows: list[dict[str, Any]] = []
    runs: dict[int, RunLink | None] = {}
    for job_id in job_ids:
        record = ctx.jobs.get(job_id)
        if record is None:
            continue  # past the job store's retention
        run_id = record.links.check_run_id
        if run_id is not None and run_id not in runs:
            runs[run_id] = ctx.state.run(run_id)
        run = runs[run_id] if run_id is not None else None
        line = run.line(record.spec.op_id) if run is not None else None
        result = line.outcome if line is not None and line.outcome else (escape_md(record.error) if record.error
                                                                          else "…")
        rows.append({"job_id": record.id, "ops": code(record.spec.op_id), "state": record.state.value,
                     "result": result})
    return rows


def refresh_status(ctx: BotContext, gh: GitHubAPI, repo: str, number: int, notice: str | None) -> None:
    """Re-render the PR's one status comment from its jobs, with ``notice`` on top (None: keep the last one).

    A Redis lock per PR serialises the writers (the web process and every bot worker), and the comment's
    id is kept in Redis, so there is one status comment however many bot processes run."""
    with ctx.state.lock(f"pr:{repo}#{number}", timeout_s=30, wait_s=60):
        links = ctx.state.pull(repo, number)
        if notice is None:
            notice = links.notice
        body = comments.render_status(notice, job_rows(ctx, links.job_ids))
        digest = hashlib.sha256(body.encode()).hexdigest()
        if links.status_comment_id is not None and links.body_sha256 == digest:
            return
        comment_id = comments.upsert_status(gh, repo, number, body, ctx.bot_login, links.status_comment_id)
        ctx.state.update_pull(repo, number, lambda old: old.model_copy(update={
            "status_comment_id": comment_id, "notice": notice, "body_sha256": digest}))
