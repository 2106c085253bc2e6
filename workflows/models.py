"""The typed contract of the worker tier: what a job is, what state it is in, what it produced.

Everything that crosses Redis (the job store, Celery task arguments) is one of these models,
serialised with ``model_dump_json`` and read back with ``model_validate_json``; nothing reads a
job as a nested dict by key. The bot, the CLI (``kernelevo jobs``) and the GPU workers share them.

A job is one search: one op of one repository at one commit, with its settings and budgets. The
repository's files travel with the job as a content-addressed tarball (:class:`RepoSource`), so a
worker never needs a GitHub token.
"""

from __future__ import annotations

import enum
import hashlib
import json
from datetime import datetime, timezone

from pydantic import BaseModel, ConfigDict, Field


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class JobState(str, enum.Enum):
    """queued -> running -> one terminal state. ``no_improvement``: the search ended without a kernel
    that beats the baselines (on a GPU) or without an accepted kernel (on CPU)."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    NO_IMPROVEMENT = "no_improvement"

    @property
    def terminal(self) -> bool:
        return self not in (JobState.QUEUED, JobState.RUNNING)


class OriginKind(str, enum.Enum):
    PR = "pr"  # /kernelevo optimize on a pull request (or its check-run button)
    SWEEP = "sweep"  # a scheduled sweep of a repository's default branch
    CLI = "cli"  # kernelevo jobs submit PATH


class Origin(BaseModel):
    """Who asked for the job and where its results are reported (the bot's business, not the worker's)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: OriginKind
    requested_by: str = ""
    installation_id: int | None = None
    pr_number: int | None = None
    base_ref: str | None = None  # the branch a follow-up PR targets


class Budgets(BaseModel):
    """Limits of the search (None: unlimited); mirrors ``kernelevo.search.budget.Budget``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    candidates: int | None = Field(default=32, ge=1)
    minutes: float | None = Field(default=None, gt=0)
    tokens: int | None = Field(default=None, ge=1)
    usd: float | None = Field(default=None, ge=0)
    plateau_generations: int | None = Field(default=6, ge=1)


class RepoSource(BaseModel):
    """The repository's files at the job's commit: a gzip tarball stored in Redis under ``blob_key``,
    named by its SHA-256 (the worker checks it before unpacking)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    blob_key: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    size_bytes: int = Field(ge=0)


class JobSpec(BaseModel):
    """Everything a worker needs to run the search, and nothing secret."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repo: str  # "owner/name", or a local label for CLI jobs
    commit_sha: str
    op_id: str  # "path/to/file.py::qualname"
    source: RepoSource
    device: str = Field(default="cuda", pattern=r"^(cpu|cuda)$")
    backend: str = "triton"
    proposer: str = Field(default="auto", pattern=r"^(auto|offline|llm)$")
    model: str | None = None
    budgets: Budgets = Field(default_factory=Budgets)
    seed: int = 0
    origin: Origin

    def idempotency_key(self) -> str:
        """(repo, PR, op, commit): the same request twice returns the same job."""
        raw = json.dumps([self.repo, self.origin.pr_number, self.op_id, self.commit_sha, self.origin.kind.value])
        return hashlib.sha256(raw.encode()).hexdigest()[:32]

    def lock_key(self) -> str:
        """One running search per (repo, op) at a time."""
        return hashlib.sha256(json.dumps([self.repo, self.op_id]).encode()).hexdigest()[:32]


class JobProgress(BaseModel):
    """The latest progress snapshot of the search (from ``kernelevo.search.result.Progress``)."""

    generation: int = 0
    evaluated: int = 0
    accepted: int = 0
    best_fitness: float = 0.0
    best_speedup_vs_eager: float | None = None
    best_speedup_vs_compile: float | None = None
    tokens: int = 0
    cost_usd: float = 0.0
    elapsed_s: float = 0.0
    eta_s: float | None = None
    timed: bool = False


class JobLinks(BaseModel):
    """Where the bot reports the job on GitHub."""

    check_run_id: int | None = None
    status_comment_id: int | None = None
    follow_up_pr: int | None = None


class JobResult(BaseModel):
    """What the search produced (the search's summary, trimmed to what publishing and reports need)."""

    stop_reason: str
    best_source: str | None = None
    best_fitness: float = 0.0
    verdict: dict | None = None  # the winner's verdict (evaluator.verdict.Verdict as JSON)
    summary: dict = Field(default_factory=dict)  # kernelevo.search.result.SearchResult.to_dict()


class JobRecord(BaseModel):
    """One job as the store keeps it."""

    id: str
    spec: JobSpec
    state: JobState = JobState.QUEUED
    progress: JobProgress = Field(default_factory=JobProgress)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    heartbeat_at: datetime | None = None
    owner: str | None = None  # the worker node running the current chunk
    epoch: int = 0  # incremented whenever a chunk is (re-)enqueued; older chunk messages are dropped
    chunks: int = 0  # chunks started so far
    cancel_requested: bool = False
    result: JobResult | None = None
    error: str | None = None
    links: JobLinks = Field(default_factory=JobLinks)
    published: bool = False  # the bot has reported the terminal state on GitHub
