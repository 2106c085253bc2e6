"""What every handler gets besides the event and the GitHub client, plus the shared PR helpers.

:class:`BotContext` carries the job queue, the work queue, the clock, the approval store, the
workspace provider (local checkouts by SHA) and the small in-memory state that links jobs to their
check runs and follow-up PRs. The helpers here (repo config, changed ops, submitting a job, refreshing
the status comment) are used by several routers, so they live in one place.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from bot import checks, comments, trust
from bot.github_api import GitHubAPI
from bot.workqueue import WorkQueue
from kernelevo.jobs import JobQueue, JobRequest, WorkspaceProvider
from kernelevo.repo_config import CONFIG_PATH, RepoConfig, RepoConfigError, load_repo_config


@dataclass
class JobLink:
    """Where a job reports: its repo/PR/installation and check run."""

    repo: str
    pr_number: int | None
    installation_id: int
    check_run_id: int | None = None
    fork: bool = False
    outcomes: dict[str, str] = field(default_factory=dict)  # op -> one line (with PR link)
    ready: threading.Event = field(default_factory=threading.Event)  # set once the check run exists
    check_lock: threading.Lock = field(default_factory=threading.Lock)  # one check-run write at a time
    progress_seq: int = 0  # progress updates queued so far
    sent_seq: int = 0  # the newest progress update written
    finished: bool = False  # the final update was written: no progress may follow it


@dataclass
class BotContext:
    """Dependencies and state shared by the routers and the job hooks."""

    github: Callable[[int], GitHubAPI]
    jobs: JobQueue
    work: WorkQueue
    workspace: WorkspaceProvider
    approvals: trust.ApprovalStore = field(default_factory=trust.MemoryApprovalStore)
    clock: Callable[[], float] = time.time
    bot_login: str = "kernelevo[bot]"
    progress_interval_s: float = 60.0
    links: dict[str, JobLink] = field(default_factory=dict)
    pending: dict[tuple[str, int], object] = field(default_factory=dict)  # waiting for approval
    discovery_runs: dict[int, tuple[str, int]] = field(default_factory=dict)  # check run -> (repo, PR)
    lock: threading.Lock = field(default_factory=threading.Lock)
    throttle: checks.Throttle | None = None
    forget_installation: Callable[[int], None] | None = None
    installations: dict[str, int] = field(default_factory=dict)  # repo -> installation (from events)

    def __post_init__(self) -> None:
        if self.throttle is None:
            self.throttle = checks.Throttle(self.progress_interval_s, self.clock)
        self._pr_locks: dict[tuple[str, int], threading.Lock] = {}

    def pr_lock(self, repo: str, number: int) -> threading.Lock:
        """Serialises updates of one PR's status comment within this process."""
        with self.lock:
            return self._pr_locks.setdefault((repo, number), threading.Lock())


def load_config(gh: GitHubAPI, repo: str, ref: str) -> tuple[RepoConfig, str | None]:
    """The repo's ``.github/kernelevo.yml`` at ``ref`` (the trusted base branch, never a PR head).

    Returns defaults when the file is absent, and defaults plus the error text when it is invalid.
    """
    text = gh.read_file(repo, CONFIG_PATH, ref)
    if text is None:
        return RepoConfig(), None
    try:
        return load_repo_config(text), None
    except RepoConfigError as exc:
        return RepoConfig(), f"`{CONFIG_PATH}` on `{ref}` is invalid, so nothing runs until it is fixed:\n{exc}"


def discover_ops(ctx: BotContext, repo: str, sha: str, config: RepoConfig) -> dict[str, str]:
    """``{op_id: source_hash}`` of a commit, by static discovery (never imports repo code)."""
    from kernelevo.discovery import discover

    with ctx.workspace(repo, sha) as root:
        return discover(root, config.paths.include, config.paths.exclude).hashes()


def changed_ops(ctx: BotContext, repo: str, base_sha: str, head_sha: str,
                config: RepoConfig) -> tuple[list[str], list[str], list[str]]:
    """(added, changed, all ops at head) between the PR's base and head commits."""
    from kernelevo.discovery import diff_ops

    before = discover_ops(ctx, repo, base_sha, config)
    after = discover_ops(ctx, repo, head_sha, config)
    diff = diff_ops(before, after)
    return diff.added, diff.changed, sorted(after)


def backend_for(requested: str | None, config: RepoConfig) -> str:
    """The backend a job searches: the command's flag, else the config's single backend, else any."""
    if requested:
        return requested
    return config.backends[0] if len(config.backends) == 1 else "any"


def follow_up_base(pull: dict) -> str:
    """Branch the follow-up PR targets: the PR's head branch, or its base branch for fork PRs."""
    return pull["base"]["ref"] if trust.is_fork(pull) else pull["head"]["ref"]


def submit_job(ctx: BotContext, gh: GitHubAPI, request: JobRequest, *, fork: bool = False) -> str:
    """Queue a job and create its check run; returns the job id (existing one for a duplicate)."""
    with ctx.lock:  # the job may finish at once: its link must exist before anyone looks it up
        job_id = ctx.jobs.submit(request)
        if job_id in ctx.links:
            return job_id
        link = JobLink(request.repo, request.pr_number, request.installation_id, fork=fork)
        ctx.links[job_id] = link
    try:
        link.check_run_id = checks.start_job_run(gh, request.repo, request.head_sha, job_id, request.ops)
    finally:
        link.ready.set()
    return job_id


def refresh_status(ctx: BotContext, gh: GitHubAPI, repo: str, number: int, notice: str | None) -> None:
    """Re-render the PR's one status comment from its jobs, with ``notice`` on top."""
    jobs = ctx.jobs.find(repo, number)
    with ctx.lock:
        outcomes = {j.job_id: dict(ctx.links[j.job_id].outcomes) for j in jobs if j.job_id in ctx.links}
    with ctx.pr_lock(repo, number):
        comments.upsert_status(gh, repo, number, comments.render_status(notice, jobs, outcomes), ctx.bot_login)
