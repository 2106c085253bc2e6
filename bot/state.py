"""The bot's durable state in Redis: typed records that survive a restart of any bot process.

What lives here (every value a pydantic model, written with ``model_dump_json``): approvals bound to a
head SHA, optimize requests waiting for an approval, each PR's status comment and jobs, the check run
of each optimize request with one line per op (:class:`RunLink`), the jobs not yet reported on GitHub,
the discovery check runs, the repo -> installation map, webhook deliveries and the sweeps' last runs.
Job records themselves stay in the worker tier's store (``workflows.store``); this only links them to
GitHub. Read-modify-write goes through ``WATCH``/``MULTI`` transactions, so two bot processes never
lose each other's update; GitHub writes that must not interleave take a :meth:`BotState.lock`.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TypeVar

import redis
from pydantic import BaseModel, Field

from bot.commands import Command
from workflows.models import utcnow
from workflows.redis_values import text, transaction

M = TypeVar("M", bound=BaseModel)
R = TypeVar("R", bound=BaseModel | None)  # what an update's change returns: a record, or None to leave it

PREFIX = "kernelevo:bot"
REPO_RE = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")
RETENTION_S = 30 * 86400  # links of finished work; matches the job store's default retention
MAX_PR_JOBS = 60  # the status comment lists at most this many of a PR's newest jobs


def check_repo(repo: str) -> str:
    """``repo`` if it is an ``owner/name`` (it reaches key names), else ValueError."""
    if not isinstance(repo, str) or not REPO_RE.match(repo):
        raise ValueError(f"{repo!r} is not a repository name (owner/name)")
    return repo


class Conclusion(str, enum.Enum):
    """A check-run conclusion, per op and for a whole run."""

    SUCCESS = "success"
    NEUTRAL = "neutral"
    FAILURE = "failure"
    CANCELLED = "cancelled"


class Approval(BaseModel):
    sha: str
    by: str
    at: datetime = Field(default_factory=utcnow)


class PendingRequest(BaseModel):
    """An optimize request that waits for a maintainer's ``/kernelevo approve``."""

    command: Command
    requested_by: str
    head_sha: str
    at: datetime = Field(default_factory=utcnow)


class OpLine(BaseModel):
    """One op of an optimize request: its job and, once reported, its one-line outcome."""

    op_id: str
    job_id: str | None = None
    outcome: str | None = None  # Markdown, user text already escaped
    conclusion: Conclusion | None = None
    follow_up_pr: int | None = None


class RunLink(BaseModel):
    """The check run of one optimize request (or of one job that lost its request's run)."""

    check_run_id: int
    repo: str
    installation_id: int
    pr_number: int | None = None
    head_sha: str
    fork: bool = False
    ops: list[OpLine] = Field(default_factory=list)
    submitted: bool = False  # every op's job was submitted (or refused): a line without a job is lost
    started: bool = False  # the check run was moved to in_progress
    completed: bool = False
    created_at: datetime = Field(default_factory=utcnow)

    def line(self, op_id: str) -> OpLine | None:
        return next((line for line in self.ops if line.op_id == op_id), None)

    @property
    def done(self) -> bool:
        return bool(self.ops) and all(line.outcome is not None for line in self.ops)


class PullLinks(BaseModel):
    """A PR's status comment and the jobs it lists (newest last, bounded)."""

    status_comment_id: int | None = None
    job_ids: list[str] = Field(default_factory=list)
    notice: str | None = None
    body_sha256: str | None = None  # of the status comment as last written (an unchanged one is not re-sent)


class OpenJob(BaseModel):
    """A job the bot submitted and has not reported yet (what reconciling looks at after a restart)."""

    job_id: str
    op_id: str
    repo: str
    installation_id: int
    pr_number: int | None = None
    check_run_id: int | None = None


class DiscoveryRun(BaseModel):
    repo: str
    pr_number: int


class SweepState(BaseModel):
    """When a repository was last swept (the cron schedule counts from here)."""

    last_run_at: datetime
    commit_sha: str | None = None
    job_ids: list[str] = Field(default_factory=list)


class DeliveryClaim(str, enum.Enum):
    """What a webhook delivery id is to this bot."""

    NEW = "new"  # never seen (or its handling died): handle it now
    HANDLING = "handling"  # another request is handling it right now
    DONE = "done"  # handled already: a replay


class CommentClaim(str, enum.Enum):
    """What a (comment, action) is to this bot: GitHub's signature does not cover the delivery id, so a
    signed body sent again under a new id is recognised by the comment it carries."""

    NEW = "new"  # first time: act on it
    SAME_DELIVERY = "same_delivery"  # this delivery again (a deferred or redelivered run): go on
    REPLAY = "replay"  # another delivery already carried this comment and action: ignore it


class BotState:
    """Every bot record in one Redis database (the job store's, usually)."""

    def __init__(self, client: redis.Redis, prefix: str = PREFIX) -> None:
        self.client, self.prefix = client, prefix

    # -- plumbing --------------------------------------------------------------------------------
    def key(self, *parts: object) -> str:
        return ":".join([self.prefix, *(str(p) for p in parts)])

    def _get(self, key: str, model: type[M]) -> M | None:
        raw = self.client.get(key)
        return model.model_validate_json(raw) if raw else None

    def _put(self, key: str, value: BaseModel, ttl_s: int | None = RETENTION_S) -> None:
        self.client.set(key, value.model_dump_json(), ex=ttl_s)

    def _update(self, key: str, model: type[M], change: Callable[[M | None], R],
                ttl_s: int | None = RETENTION_S) -> R:
        """Apply ``change`` to the record at ``key`` atomically (None from ``change``: leave it)."""

        def body(pipe: redis.client.Pipeline) -> R:
            raw = pipe.get(key)
            new = change(model.model_validate_json(raw) if raw else None)
            if new is not None:
                pipe.multi()
                pipe.set(key, new.model_dump_json(), ex=ttl_s)
            return new

        return transaction(self.client, body, key)

    def ping(self) -> None:
        """Raise ``redis.RedisError`` when Redis cannot be reached."""
        self.client.ping()

    @contextmanager
    def lock(self, name: str, *, timeout_s: float = 300.0, wait_s: float | None = 60.0) -> Iterator[bool]:
        """A Redis lock (redis-py's, expiring after ``timeout_s`` if its holder dies); yields whether it was
        taken (``wait_s`` None: wait as long as it takes; 0: do not wait)."""
        lock = self.client.lock(self.key("lock", name), timeout=timeout_s, blocking=wait_s != 0,
                                blocking_timeout=wait_s if wait_s else None)
        got = lock.acquire()
        try:
            yield got
        finally:
            if got:
                try:
                    lock.release()
                except redis.exceptions.LockError:  # it expired while held: the next holder is on its own
                    pass

    def take_turn(self, name: str, holder: str, interval_s: float) -> bool:
        """True for the one caller per interval (across every bot process) that should do ``name``."""
        return bool(self.client.set(self.key("turn", name), holder, nx=True, px=max(1, int(interval_s * 900))))

    def throttle(self, name: str, interval_s: float) -> bool:
        """True at most once per ``interval_s`` per ``name`` (progress updates of a check run)."""
        return bool(self.client.set(self.key("throttle", name), "1", nx=True, px=max(1, int(interval_s * 1000))))

    # -- check-run reports -----------------------------------------------------------------------
    def save_check_report(self, run_id: int, op_id: str, report: str) -> None:
        """Keep an op's report (a :class:`bot.report.CheckReport` as JSON) for its request's check run until the
        run is completed (which may be after the other ops' jobs end, in another bot process): one hash per check
        run, kept as long as its link."""
        key = self.key("check-reports", run_id)
        pipe = self.client.pipeline()
        pipe.hset(key, op_id, report)
        pipe.expire(key, RETENTION_S)
        pipe.execute()

    def check_reports(self, run_id: int) -> dict[str, str]:
        """The reports kept for a check run by :meth:`save_check_report` (op id -> the kept JSON)."""
        kept = self.client.hgetall(self.key("check-reports", run_id))
        return {text(op): text(body) for op, body in kept.items()}

    def drop_check_reports(self, run_id: int) -> None:
        """Forget a completed check run's reports (GitHub shows them from now on)."""
        self.client.delete(self.key("check-reports", run_id))

    # -- webhook deliveries ----------------------------------------------------------------------
    def claim_delivery(self, delivery_id: str, owner: str, lease_s: float) -> DeliveryClaim:
        """Take a delivery for handling, unless it was handled or another live handler holds it. The claim
        is a lease (``renew_deliveries``): a handler that dies lets a redelivery through once it lapses."""
        key = self.key("delivery", delivery_id)
        if self.client.set(key, f"handling:{owner}", nx=True, px=int(lease_s * 1000)):
            return DeliveryClaim.NEW
        value = text(self.client.get(key) or b"")
        if value == "done":
            return DeliveryClaim.DONE
        if not value:  # the lease lapsed between the two calls
            return self.claim_delivery(delivery_id, owner, lease_s)
        return DeliveryClaim.HANDLING

    def renew_deliveries(self, delivery_ids: list[str], owner: str, lease_s: float) -> None:
        for delivery_id in delivery_ids:
            key = self.key("delivery", delivery_id)
            if text(self.client.get(key) or b"") == f"handling:{owner}":
                self.client.pexpire(key, int(lease_s * 1000))

    def finish_delivery(self, delivery_id: str, ttl_s: int) -> None:
        """The delivery was handled: replays are refused for ``ttl_s`` (GitHub redelivers for ~3 days)."""
        self.client.set(self.key("delivery", delivery_id), "done", ex=ttl_s)

    def release_delivery(self, delivery_id: str, owner: str) -> None:
        """Give a claimed delivery up unhandled (a redelivery will be handled)."""
        key = self.key("delivery", delivery_id)
        if text(self.client.get(key) or b"") == f"handling:{owner}":
            self.client.delete(key)

    def claim_comment(self, repo: str, comment_id: int, action: str, delivery_id: str,
                      ttl_s: int = 3 * 24 * 3600) -> CommentClaim:
        """Bind a comment's ``action`` to the first delivery that carried it (kept as long as GitHub redelivers)."""
        key = self.key("comment", check_repo(repo), int(comment_id), action)
        if self.client.set(key, delivery_id, nx=True, ex=ttl_s):
            return CommentClaim.NEW
        held = text(self.client.get(key) or b"")
        return CommentClaim.SAME_DELIVERY if held == delivery_id else CommentClaim.REPLAY

    def within_limit(self, name: str, limit: int, window_s: int) -> bool:
        """Count one use of ``name`` in the current window (across every bot process); False past ``limit``."""
        key = self.key("rate", name)
        pipe = self.client.pipeline()
        pipe.incr(key)
        pipe.expire(key, window_s, nx=True)
        count = int(pipe.execute()[0])
        return count <= limit

    def first_time(self, name: str, ttl_s: int) -> bool:
        """True once per ``ttl_s`` for ``name`` (telling a rate-limited user once)."""
        return bool(self.client.set(self.key("once", name), "1", nx=True, ex=ttl_s))

    # -- installations ---------------------------------------------------------------------------
    def set_installation(self, repo: str, installation_id: int) -> None:
        self.client.hset(self.key("installations"), check_repo(repo), str(int(installation_id)))

    def installation_for(self, repo: str) -> int | None:
        raw = self.client.hget(self.key("installations"), check_repo(repo))
        return int(raw) if raw else None

    def installations(self) -> dict[str, int]:
        return {text(k): int(v) for k, v in self.client.hgetall(self.key("installations")).items()}

    def forget_repos(self, repos: list[str]) -> None:
        if repos:
            self.client.hdel(self.key("installations"), *repos)

    def forget_installation(self, installation_id: int) -> list[str]:
        """Drop every repository of a removed installation; returns them."""
        repos = [repo for repo, inst in self.installations().items() if inst == installation_id]
        self.forget_repos(repos)
        return repos

    # -- approvals and pending requests (trust.ApprovalStore) ------------------------------------
    def approve(self, repo: str, pr_number: int, sha: str, by: str) -> None:
        self._put(self.key("approval", check_repo(repo), int(pr_number)), Approval(sha=sha, by=by))

    def approved_sha(self, repo: str, pr_number: int) -> str | None:
        approval = self._get(self.key("approval", check_repo(repo), int(pr_number)), Approval)
        return approval.sha if approval else None

    def set_pending(self, repo: str, pr_number: int, pending: PendingRequest) -> None:
        self._put(self.key("pending", check_repo(repo), int(pr_number)), pending)

    def pop_pending(self, repo: str, pr_number: int) -> PendingRequest | None:
        key = self.key("pending", check_repo(repo), int(pr_number))
        raw = self.client.getdel(key)
        return PendingRequest.model_validate_json(raw) if raw else None

    # -- PRs -------------------------------------------------------------------------------------
    def pull(self, repo: str, pr_number: int) -> PullLinks:
        return self._get(self.key("pr", check_repo(repo), int(pr_number)), PullLinks) or PullLinks()

    def update_pull(self, repo: str, pr_number: int, change: Callable[[PullLinks], PullLinks]) -> PullLinks:
        return self._update(self.key("pr", check_repo(repo), int(pr_number)), PullLinks,
                            lambda old: change(old or PullLinks()))

    def add_pull_jobs(self, repo: str, pr_number: int, job_ids: list[str]) -> PullLinks:
        def change(links: PullLinks) -> PullLinks:
            ids = [*links.job_ids, *(j for j in job_ids if j not in links.job_ids)]
            return links.model_copy(update={"job_ids": ids[-MAX_PR_JOBS:]})

        return self.update_pull(repo, pr_number, change)

    # -- check runs of optimize requests ----------------------------------------------------------
    def put_run(self, run: RunLink) -> None:
        self._put(self.key("run", run.check_run_id), run)
        self.client.sadd(self.key("runs", "open"), str(run.check_run_id))

    def run(self, check_run_id: int) -> RunLink | None:
        return self._get(self.key("run", int(check_run_id)), RunLink)

    def update_run(self, check_run_id: int, change: Callable[[RunLink], RunLink | None]) -> RunLink | None:
        def apply(old: RunLink | None) -> RunLink | None:
            return None if old is None else change(old.model_copy(deep=True))

        run = self._update(self.key("run", int(check_run_id)), RunLink, apply)
        if run is not None and run.completed:
            self.client.srem(self.key("runs", "open"), str(check_run_id))
        return run

    def open_runs(self) -> list[int]:
        return sorted(int(i) for i in self.client.smembers(self.key("runs", "open")))

    def close_run(self, check_run_id: int) -> None:
        self.client.srem(self.key("runs", "open"), str(check_run_id))

    def bind_run(self, idempotency_key: str, check_run_id: int) -> None:
        """The check run reporting the job of a spec's idempotency key (set before the job is submitted, so a
        job that finishes before it is linked still finds its run)."""
        self.client.set(self.key("run-for", idempotency_key), str(int(check_run_id)), ex=RETENTION_S)

    def run_for(self, idempotency_key: str) -> int | None:
        raw = self.client.get(self.key("run-for", idempotency_key))
        return int(raw) if raw else None

    # -- jobs not yet reported -------------------------------------------------------------------
    def add_open_job(self, job: OpenJob) -> None:
        self.client.hset(self.key("jobs", "open"), job.job_id, job.model_dump_json())

    def open_jobs(self) -> list[OpenJob]:
        raws = self.client.hvals(self.key("jobs", "open"))
        return sorted((OpenJob.model_validate_json(raw) for raw in raws), key=lambda j: j.job_id)

    def discard_open_job(self, job_id: str) -> None:
        self.client.hdel(self.key("jobs", "open"), job_id)

    # -- discovery check runs --------------------------------------------------------------------
    def add_discovery_run(self, check_run_id: int, run: DiscoveryRun) -> None:
        self._put(self.key("discovery", int(check_run_id)), run, ttl_s=3 * RETENTION_S)

    def discovery_run(self, check_run_id: int) -> DiscoveryRun | None:
        return self._get(self.key("discovery", int(check_run_id)), DiscoveryRun)

    # -- sweeps ----------------------------------------------------------------------------------
    def sweep_state(self, repo: str) -> SweepState | None:
        return self._get(self.key("sweep", check_repo(repo)), SweepState)

    def set_sweep_state(self, repo: str, state: SweepState) -> None:
        self._put(self.key("sweep", check_repo(repo)), state, ttl_s=None)
