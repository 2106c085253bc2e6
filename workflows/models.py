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
from typing import Any

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
    usd: float | None = Field(default=None, gt=0)
    plateau_generations: int | None = Field(default=6, ge=1)


class SearchShape(BaseModel):
    """The search's shape where it differs from ``kernelevo.search.config.SearchConfig`` (None: its default)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    generation_size: int | None = Field(default=None, ge=1, le=256)
    parallel_evaluations: int | None = Field(default=None, ge=1, le=64)


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
    backend: str = Field(default="triton", pattern=r"^(triton|cuda|any)$")
    proposer: str = Field(default="auto", pattern=r"^(auto|offline|llm)$")  # by name only: never an import path
    model: str | None = None
    # The repo config's LLM endpoint NAME (never a URL or key): a worker runs the job only when it serves that
    # endpoint (KERNELEVO_LLM_ENDPOINT_NAME), so a repository can never point a worker's key somewhere else.
    endpoint: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    budgets: Budgets = Field(default_factory=Budgets)
    shape: SearchShape = Field(default_factory=SearchShape)
    seed: int = Field(default=0, ge=0, lt=2**63)
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
    best_id: str | None = None  # the winner's candidate id in the run's archive (None: nothing accepted)
    best_source: str | None = None
    best_fitness: float = 0.0
    verdict: dict[str, Any] | None = None  # the winner's verdict (evaluator.verdict.Verdict as JSON)
    summary: dict[str, Any] = Field(default_factory=dict)  # kernelevo.search.result.SearchResult.to_dict()


class QueueName(str, enum.Enum):
    """Celery queues: search chunks by device (one worker per GPU on ``gpu``), light bot work on ``bot``."""

    GPU = "gpu"
    CPU = "cpu"
    BOT = "bot"

    @classmethod
    def for_device(cls, device: str) -> QueueName:
        return cls.GPU if device == "cuda" else cls.CPU


class JobEventKind(str, enum.Enum):
    SUBMITTED = "submitted"
    CHUNK_STARTED = "chunk_started"
    CHUNK_ENDED = "chunk_ended"  # the chunk reached its deadline; the next one is queued
    LOCK_WAIT = "lock_wait"  # another job holds the (repo, op) lock; re-queued with a delay
    WRONG_DEVICE = "wrong_device"  # delivered to a worker of another device; re-queued to its own queue
    RECOVERED = "recovered"  # the chunk's heartbeat stopped (worker died); re-queued by the reaper
    REDISPATCHED = "redispatched"  # a chunk message was never confirmed sent; sent again by the reaper
    CANCEL_REQUESTED = "cancel_requested"
    FINISHED = "finished"


class JobEvent(BaseModel):
    """One line of a job's history (bounded: the store keeps the latest :data:`MAX_EVENTS`)."""

    at: datetime = Field(default_factory=utcnow)
    kind: JobEventKind
    epoch: int
    owner: str | None = None
    detail: str = ""


MAX_EVENTS = 100


class WorkerIdentity(BaseModel):
    """The process running a chunk: its Celery node name, pid and device."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str
    pid: int
    device: str = Field(pattern=r"^(cpu|cuda)$")


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
    owner_pid: int | None = None  # the pid of the process running the current chunk on that node
    epoch: int = 0  # incremented whenever a chunk is (re-)enqueued; older chunk messages are dropped
    chunks: int = 0  # chunks started so far
    recoveries: int = 0  # chunks re-queued because their worker died
    dispatch_pending: bool = False  # the current epoch's chunk message is not yet confirmed sent
    waiting_for: str | None = None  # the job holding this job's (repo, op) lock, while it waits
    cancel_requested: bool = False
    started_at: datetime | None = None
    finished_at: datetime | None = None
    result: JobResult | None = None
    error: str | None = None
    links: JobLinks = Field(default_factory=JobLinks)
    published: bool = False  # the bot has reported the terminal state on GitHub
    events: list[JobEvent] = Field(default_factory=list)
    last_write: str | None = None  # id of the store update that wrote this version (retries are idempotent)

    def with_event(self, kind: JobEventKind, detail: str = "", **changes: object) -> JobRecord:
        """A copy with ``changes`` applied and ``kind`` appended to the (bounded) history; a repeated wait
        (LOCK_WAIT, WRONG_DEVICE) replaces the one before it, so that a long wait does not crowd out the rest."""
        changed = self.model_copy(update=changes)
        event = JobEvent(kind=kind, epoch=changed.epoch, owner=changed.owner, detail=detail)
        events = list(self.events)
        if events and events[-1].kind is kind and kind in (JobEventKind.LOCK_WAIT, JobEventKind.WRONG_DEVICE):
            events.pop()
        return changed.model_copy(update={"events": [*events, event][-MAX_EVENTS:], "updated_at": utcnow()})


# -- the vocabulary of the store's and the chunk's decisions (workflows.lifecycle) ----------------------------


class ClaimOutcome(str, enum.Enum):
    """What a worker does with a chunk message it received."""

    RUN = "run"  # the claim is ours: run the chunk
    STALE = "stale"  # an older epoch's message (redelivered after a re-queue): drop it
    TERMINAL = "terminal"  # the job is finished (or was cancelled while queued): drop it
    BUSY = "busy"  # another live process runs this epoch's chunk: drop the duplicate
    WAIT_LOCK = "wait_lock"  # another job searches the same (repo, op): re-queue with a delay
    WRONG_DEVICE = "wrong_device"  # the job needs another kind of worker: re-queue on its queue
    CANCEL = "cancel"  # cancel was asked and no chunk runs: record the job as cancelled
    MISSING = "missing"  # no such job (expired or never stored): drop it


class ChunkEnd(str, enum.Enum):
    """How a chunk's call of ``run_search`` ended."""

    FINISHED = "finished"  # the search stopped by itself: record the terminal state
    CANCELLED = "cancelled"  # the user cancelled: record ``cancelled``
    CONTINUE = "continue"  # the chunk's deadline: queue the next chunk
    FENCED = "fenced"  # this process lost its claim (the job was re-queued): write nothing more
    FAILED = "failed"  # the search could not run (setup error): the job is recorded failed


class ReapAction(str, enum.Enum):
    NONE = "none"
    RECOVER = "recover"  # the chunk's lease expired: re-queue the job (new epoch)
    REDISPATCH = "redispatch"  # a chunk message was never confirmed sent: send one (new epoch)
    CANCEL = "cancel"  # the lease expired on a job whose cancel was asked: record it cancelled
    FAIL = "fail"  # its workers died too often: record it failed
    FORGET = "forget"  # terminal, still listed as active: drop it from the active set


class CancelOutcome(str, enum.Enum):
    CANCELLED = "cancelled"  # no chunk was running: the job is now cancelled
    REQUESTED = "requested"  # a chunk is running: it stops at its next candidate boundary
    FINISHED = "finished"  # the job had already reached a terminal state
    NOT_FOUND = "not_found"


class SubmitOutcome(BaseModel):
    """``created`` is False when the request duplicated a live or finished job (its record is returned)."""

    record: JobRecord
    created: bool


class Claim(BaseModel):
    outcome: ClaimOutcome
    record: JobRecord | None = None


class Lease(BaseModel):
    """What a chunk's heartbeat learns: whether it still owns the job, and whether cancel was asked."""

    fenced: bool = False
    cancel_requested: bool = False


class ReapResult(BaseModel):
    job_id: str
    action: ReapAction
    record: JobRecord | None = None
