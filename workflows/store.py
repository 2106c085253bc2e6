"""The job store: typed job records in Redis, changed only by atomic transactions.

Every change reads the record under ``WATCH``, decides with a pure function of
:mod:`workflows.lifecycle`, and writes in ``MULTI``/``EXEC``; a concurrent writer makes the transaction
start over (redis-py's ``transaction`` loop), so no update is lost. Each logical update carries an id
stored in the record (``last_write``): when a connection drops after ``EXEC`` and the update is retried,
the retry sees its own write and does not apply it twice.

The store never publishes Celery messages: methods that queue a chunk leave the record with
``dispatch_pending`` and a short ``dispatching`` lease, the caller sends the message and calls
:meth:`JobStore.confirm_dispatch`; if the caller dies in between, the reaper sends it again.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import logging
import re
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeGuard, TypeVar

import redis
from redis.client import Pipeline

from workflows.keys import Keys
from workflows.lifecycle import decide_claim, reap_action
from workflows.models import (
    CancelOutcome,
    Claim,
    ClaimOutcome,
    JobEventKind,
    JobProgress,
    JobRecord,
    JobResult,
    JobSpec,
    JobState,
    Lease,
    ReapAction,
    ReapResult,
    RepoSource,
    SubmitOutcome,
    WorkerIdentity,
    utcnow,
)
from workflows.redis_conn import retrying
from workflows.redis_values import blob, text, transaction

log = logging.getLogger(__name__)

T = TypeVar("T")

JOB_ID = re.compile(r"^job-[0-9a-f]{12}$")


class BlobError(ValueError):
    """The job's repository tarball is missing, too large or not what its hash says."""


class Fenced(RuntimeError):
    """This process no longer owns the job's current chunk (the job was re-queued or finished)."""


def new_job_id() -> str:
    return f"job-{uuid.uuid4().hex[:12]}"


def check_job_id(job_id: str) -> str:
    """``job_id`` if it has the store's shape (ids reach Redis key names), else ValueError."""
    if not isinstance(job_id, str) or not JOB_ID.match(job_id):
        raise ValueError(f"{job_id!r} is not a job id (job-<12 hex digits>, as `kernelevo jobs list` shows)")
    return job_id


@dataclass(frozen=True)
class StoreLimits:
    """The store's timings and caps (from the ``KERNELEVO_QUEUE_*`` settings)."""

    heartbeat_ttl_s: float = 60.0
    dispatch_grace_s: float = 60.0  # how long a sender may take between queuing a chunk and confirming it
    retention_s: float = 30 * 86400.0
    blob_ttl_s: float = 7 * 86400.0
    blob_max_bytes: int = 64 * 2**20
    run_max_bytes: int = 256 * 2**20
    max_recoveries: int = 5
    redis_retry_s: float = 120.0

    @classmethod
    def from_settings(cls, settings: Any, *, redis_retry_s: float | None = None) -> StoreLimits:
        return cls(
            heartbeat_ttl_s=settings.queue_heartbeat_ttl_s, dispatch_grace_s=settings.queue_heartbeat_ttl_s,
            retention_s=settings.queue_retention_s, blob_ttl_s=settings.queue_blob_ttl_s,
            blob_max_bytes=settings.queue_blob_max_bytes, run_max_bytes=settings.queue_run_max_bytes,
            max_recoveries=settings.queue_max_recoveries,
            redis_retry_s=settings.queue_redis_retry_s if redis_retry_s is None else redis_retry_s,
        )


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def result_from_summary(summary: dict[str, Any]) -> JobResult:
    """A :class:`JobResult` from a search's ``summary.json`` / ``SearchResult.to_dict()``; keeps the winner's
    candidate id, by which a report finds its generation, strategy and lineage in the run's archive."""
    best = summary.get("best") or None
    trimmed = {k: v for k, v in summary.items() if k not in ("best", "run_dir")}
    best_id = best.get("id") if best else None
    return JobResult(
        stop_reason=str(summary.get("stop_reason") or "unknown"),
        best_id=str(best_id) if best_id is not None else None,
        best_source=best.get("source") if best else None,
        best_fitness=float(best.get("fitness") or 0.0) if best else 0.0,
        verdict=best.get("verdict") if best else None,
        summary=trimmed,
    )


class JobStore:
    """Job records, repository blobs, locks and leases in one Redis database."""

    def __init__(self, client: redis.Redis, *, limits: StoreLimits | None = None, keys: Keys | None = None) -> None:
        self.client = client
        self.limits = limits or StoreLimits()
        self.keys = keys or Keys()
        self._retry = retrying(self.limits.redis_retry_s)

    # -- plumbing --------------------------------------------------------------------------------
    def _transact(self, body: Callable[[Pipeline], T], *watch: str) -> T:
        return self._retry(lambda: transaction(self.client, body, *watch))

    def _read(self, pipe: Pipeline | redis.Redis, job_id: str) -> JobRecord | None:
        raw = pipe.get(self.keys.job(job_id))
        return JobRecord.model_validate_json(raw) if raw else None

    def _put(self, pipe: Pipeline, record: JobRecord, op: str) -> None:
        """Queue the write of ``record`` (after ``pipe.multi()``); terminal records expire after retention."""
        record.last_write = op
        ttl = _ms(self.limits.retention_s) if record.state.terminal else None
        pipe.set(self.keys.job(record.id), record.model_dump_json(), px=ttl)

    def _terminal(self, pipe: Pipeline, record: JobRecord, holder: str | None, op: str) -> None:
        """Queue everything a terminal transition writes: the record, the finished count of its state, the lock
        release, the cleanup."""
        self._put(pipe, record, op)
        job_id, retention = record.id, _ms(self.limits.retention_s)
        pipe.srem(self.keys.active, job_id)
        pipe.hincrby(self.keys.finished, record.state.value, 1)
        pipe.delete(self.keys.heartbeat(job_id), self.keys.dispatching(job_id))
        if holder == job_id:
            pipe.delete(self.keys.lock(record.spec.lock_key()))
        pipe.pexpire(self.keys.idempotency(record.spec.idempotency_key()), retention)
        if record.spec.origin.pr_number is not None:  # kept as long as the PR's latest finished job
            pipe.pexpire(self.keys.pull_request(record.spec.repo, record.spec.origin.pr_number), retention)
        for key in (self.keys.run_files(job_id), self.keys.run_appends(job_id), self.keys.run_bytes(job_id)):
            pipe.pexpire(key, retention)  # the line lists: _expire_run_lines, after the transaction

    def _watch_lock(self, pipe: Pipeline, record: JobRecord) -> str | None:
        """Watch and read the (repo, op) lock of ``record`` (before ``multi``): the id of the job holding it."""
        key = self.keys.lock(record.spec.lock_key())
        pipe.watch(key)
        holder = pipe.get(key)
        return text(holder) if holder else None

    def _expire_run_lines(self, job_id: str) -> None:
        retention = _ms(self.limits.retention_s)
        names = self.client.smembers(self.keys.run_appends(job_id))
        for name in names:
            self.client.pexpire(self.keys.run_lines(job_id, text(name)), retention)

    @staticmethod
    def _already(record: JobRecord | None, op: str) -> TypeGuard[JobRecord]:
        """Whether ``record`` carries the write of update ``op`` (its transaction is being retried)."""
        return record is not None and record.last_write is not None and record.last_write.startswith(op)

    @staticmethod
    def _outcome_written(record: JobRecord) -> str:
        """The outcome in the record's ``op:outcome`` write tag (what the retried update decided)."""
        _, sep, outcome = (record.last_write or "").partition(":")
        if not sep:
            raise ValueError(f"{record.id}: its last write {record.last_write!r} carries no outcome (op:outcome)")
        return outcome

    # -- blobs -----------------------------------------------------------------------------------
    def put_blob(self, data: bytes) -> RepoSource:
        """Store a repository tarball under its SHA-256 (an identical one is shared, its expiry renewed)."""
        if len(data) > self.limits.blob_max_bytes:
            raise BlobError(f"the repository tarball is {len(data) / 2**20:.1f} MiB, over the"
                            f" {self.limits.blob_max_bytes / 2**20:.1f} MiB cap (KERNELEVO_QUEUE_BLOB_MAX_BYTES):"
                            " leave large data files out of the repository or raise the cap")
        digest = hashlib.sha256(data).hexdigest()
        key = self.keys.blob(digest)
        ttl = _ms(self.limits.blob_ttl_s)

        def put() -> None:
            if not self.client.set(key, data, nx=True, px=ttl):
                self.client.pexpire(key, ttl)

        self._retry(put)
        return RepoSource(blob_key=key, sha256=digest, size_bytes=len(data))

    def get_blob(self, source: RepoSource) -> bytes:
        """The tarball ``source`` names, checked against its size cap and SHA-256."""
        key = self.keys.blob(source.sha256)
        if source.blob_key != key:
            raise BlobError(f"the job's repository key {source.blob_key!r} is not the content key {key!r}")
        size = self._retry(lambda: self.client.strlen(key))
        if size == 0:
            raise BlobError(f"the job's repository tarball ({source.sha256[:12]}) is no longer in Redis (it expires"
                            f" {self.limits.blob_ttl_s / 86400:g} days after its last use): submit the job again")
        if size > self.limits.blob_max_bytes:
            raise BlobError(f"the job's repository tarball is {size} bytes, over the cap of"
                            f" {self.limits.blob_max_bytes} (KERNELEVO_QUEUE_BLOB_MAX_BYTES)")
        data = blob(self._retry(lambda: self.client.get(key)) or b"")
        if hashlib.sha256(data).hexdigest() != source.sha256:
            raise BlobError(f"the job's repository tarball does not match its SHA-256 {source.sha256[:12]}...:"
                            " it was altered in Redis; submit the job again")
        self._retry(lambda: self.client.pexpire(key, _ms(self.limits.blob_ttl_s)))
        return data

    # -- reading ---------------------------------------------------------------------------------
    def get(self, job_id: str) -> JobRecord | None:
        check_job_id(job_id)
        return self._retry(lambda: self._read(self.client, job_id))

    def list(self, states: Iterable[JobState] | None = None, limit: int = 50) -> builtins.list[JobRecord]:
        """The newest jobs first, at most ``limit`` of them, only those in ``states`` when given."""
        wanted = set(states) if states else None

        def read() -> list[JobRecord]:
            found: list[JobRecord] = []
            start, page = 0, max(limit, 50)
            while len(found) < limit:
                ids = [text(i) for i in self.client.zrevrange(self.keys.jobs, start, start + page - 1)]
                if not ids:
                    break
                raws = self.client.mget([self.keys.job(i) for i in ids])
                expired = [i for i, raw in zip(ids, raws) if raw is None]
                if expired:  # finished jobs past their retention
                    self.client.zrem(self.keys.jobs, *expired)
                    start -= len(expired)
                for raw in raws:
                    if raw is None:
                        continue
                    record = JobRecord.model_validate_json(raw)
                    if wanted is None or record.state in wanted:
                        found.append(record)
                start += page
            return found[:limit]

        return self._retry(read)

    def find(self, repo: str, pr_number: int) -> builtins.list[JobRecord]:
        """Every job of a pull request still kept, oldest first."""

        def read() -> builtins.list[JobRecord]:
            ids = sorted(text(i) for i in self.client.smembers(self.keys.pull_request(repo, pr_number)))
            raws = self.client.mget([self.keys.job(i) for i in ids]) if ids else []
            return [JobRecord.model_validate_json(raw) for raw in raws if raw is not None]

        return sorted(self._retry(read), key=lambda r: r.created_at)

    def lease_alive(self, job_id: str) -> bool:
        return bool(self._retry(lambda: self.client.exists(self.keys.heartbeat(job_id))))

    def run_summary(self, job_id: str) -> dict[str, Any] | None:
        """The job's latest ``summary.json`` from its run copy (written at the end of every chunk)."""
        raw = self._retry(lambda: self.client.hget(self.keys.run_files(job_id), "summary.json"))
        return json.loads(raw) if raw else None

    # -- submitting ------------------------------------------------------------------------------
    def submit(self, spec: JobSpec) -> SubmitOutcome:
        """Store a new queued job, or return the job an identical request made (unless that one failed or
        was cancelled: then a new one is made). The caller sends the first chunk when ``created``."""
        idem = self.keys.idempotency(spec.idempotency_key())
        blob = self.keys.blob(spec.source.sha256)
        job_id = new_job_id()
        op = uuid.uuid4().hex

        def body(pipe: Pipeline) -> SubmitOutcome:
            existing = pipe.get(idem)
            if existing:
                record = self._read(pipe, text(existing))
                if record is not None and record.id == job_id:  # our own write, retried
                    return SubmitOutcome(record=record, created=True)
                if record is not None and record.state not in (JobState.FAILED, JobState.CANCELLED):
                    return SubmitOutcome(record=record, created=False)
            if spec.source.blob_key != blob:
                raise BlobError(f"the job's repository key {spec.source.blob_key!r} is not the content key {blob!r}")
            if not pipe.exists(blob):
                raise BlobError(f"the repository tarball {spec.source.sha256[:12]} is not in Redis: upload it"
                                " (JobsClient.upload_repo) before submitting")
            record = JobRecord(id=job_id, spec=spec, epoch=1, dispatch_pending=True).with_event(JobEventKind.SUBMITTED)
            pipe.multi()
            self._put(pipe, record, op)
            pipe.set(idem, job_id)
            pipe.zadd(self.keys.jobs, {job_id: record.created_at.timestamp()})
            pipe.sadd(self.keys.active, job_id)
            pipe.set(self.keys.dispatching(job_id), "1", px=_ms(self.limits.dispatch_grace_s))
            pipe.pexpire(blob, _ms(self.limits.blob_ttl_s))
            if spec.origin.pr_number is not None:
                pipe.sadd(self.keys.pull_request(spec.repo, spec.origin.pr_number), job_id)
            return SubmitOutcome(record=record, created=True)

        return self._transact(body, idem)

    def confirm_dispatch(self, job_id: str, epoch: int) -> None:
        """The chunk message of ``epoch`` was sent: the reaper need not send it again."""
        key = self.keys.job(job_id)

        def body(pipe: Pipeline) -> None:
            record = self._read(pipe, job_id)
            if record is None or record.epoch != epoch or not record.dispatch_pending:
                return  # claimed already, or re-queued since
            pipe.multi()
            record.dispatch_pending = False
            self._put(pipe, record, uuid.uuid4().hex)
            pipe.delete(self.keys.dispatching(job_id))

        self._transact(body, key)

    def _queue_next(self, pipe: Pipeline, record: JobRecord, kind: JobEventKind, detail: str, op: str,
                    extra_grace_s: float = 0.0, **changes: Any) -> JobRecord:
        """Queue the write of ``record`` moved to a new epoch whose chunk message is about to be sent."""
        new = record.with_event(kind, detail, epoch=record.epoch + 1, owner=None, owner_pid=None,
                                dispatch_pending=True, **changes)
        pipe.multi()
        self._put(pipe, new, op)
        pipe.delete(self.keys.heartbeat(record.id))
        pipe.set(self.keys.dispatching(record.id), "1", px=_ms(self.limits.dispatch_grace_s + extra_grace_s))
        return new

    # -- the chunk's side ------------------------------------------------------------------------
    def claim(self, job_id: str, epoch: int, worker: WorkerIdentity, *, lock_retry_s: float = 30.0) -> Claim:
        """Decide what ``worker`` does with the chunk message of ``epoch`` and record it atomically.

        RUN takes the lease and the (repo, op) lock; WAIT_LOCK and WRONG_DEVICE move the job to a new
        epoch whose message the caller sends (with a delay for WAIT_LOCK); CANCEL records the job cancelled."""
        key, hb = self.keys.job(job_id), self.keys.heartbeat(job_id)
        op = uuid.uuid4().hex

        def body(pipe: Pipeline) -> Claim:
            record = self._read(pipe, job_id)
            if self._already(record, op):
                return Claim(outcome=ClaimOutcome(self._outcome_written(record)), record=record)
            if record is None:
                return Claim(outcome=ClaimOutcome.MISSING)
            holder = self._watch_lock(pipe, record)
            holder_live = False
            if holder not in (None, job_id):
                pipe.watch(self.keys.job(holder))
                other = self._read(pipe, holder)
                holder_live = other is not None and not other.state.terminal
            outcome = decide_claim(record, epoch, worker, lease_alive=bool(pipe.exists(hb)), lock_holder=holder,
                                   holder_live=holder_live)
            tag = f"{op}:{outcome.value}"
            if outcome is ClaimOutcome.RUN:
                now = utcnow()
                new = record.with_event(
                    JobEventKind.CHUNK_STARTED, f"chunk {record.chunks + 1} (pid {worker.pid})",
                    state=JobState.RUNNING, owner=worker.node, owner_pid=worker.pid, chunks=record.chunks + 1,
                    dispatch_pending=False, waiting_for=None, started_at=record.started_at or now, heartbeat_at=now,
                )
                pipe.multi()
                self._put(pipe, new, tag)
                pipe.set(hb, f"{worker.node}:{worker.pid}", px=_ms(self.limits.heartbeat_ttl_s))
                pipe.set(self.keys.lock(record.spec.lock_key()), job_id)
                pipe.delete(self.keys.dispatching(job_id))
                pipe.pexpire(self.keys.blob(record.spec.source.sha256), _ms(self.limits.blob_ttl_s))
                return Claim(outcome=outcome, record=new)
            if outcome is ClaimOutcome.WAIT_LOCK:
                new = self._queue_next(pipe, record, JobEventKind.LOCK_WAIT,
                                       f"{holder} searches the same op; trying again in {lock_retry_s:g}s", tag,
                                       extra_grace_s=lock_retry_s, waiting_for=holder)
                return Claim(outcome=outcome, record=new)
            if outcome is ClaimOutcome.WRONG_DEVICE:
                new = self._queue_next(pipe, record, JobEventKind.WRONG_DEVICE,
                                       f"delivered to a {worker.device} worker ({worker.node}); the job needs"
                                       f" {record.spec.device}: check the workers' --queues", tag)
                return Claim(outcome=outcome, record=new)
            if outcome is ClaimOutcome.CANCEL:
                new = self._cancelled(record, "cancelled by request before its next chunk started", job_id)
                pipe.multi()
                self._terminal(pipe, new, holder, tag)
                return Claim(outcome=outcome, record=new)
            return Claim(outcome=outcome, record=record)

        claim = self._transact(body, key, hb)
        if claim.record is not None and claim.record.state.terminal:
            self._expire_run_lines(job_id)
        return claim

    def _cancelled(self, record: JobRecord, detail: str, job_id: str) -> JobRecord:
        summary = self.client.hget(self.keys.run_files(job_id), "summary.json")
        result = record.result
        if summary:
            result = result_from_summary(json.loads(summary))
        return record.with_event(JobEventKind.FINISHED, detail, state=JobState.CANCELLED, owner=None, owner_pid=None,
                                 dispatch_pending=False, waiting_for=None, finished_at=utcnow(), result=result,
                                 error=detail)

    def _owned(self, pipe: Pipeline, job_id: str, epoch: int, worker: WorkerIdentity) -> JobRecord | None:
        record = self._read(pipe, job_id)
        if (record is None or record.state.terminal or record.epoch != epoch or record.owner != worker.node
                or record.owner_pid != worker.pid):
            return None
        return record

    def heartbeat(self, job_id: str, epoch: int, worker: WorkerIdentity,
                  progress: JobProgress | None = None) -> Lease:
        """Renew the chunk's lease (and record ``progress``); tells whether the chunk still owns the job
        and whether cancel was asked."""
        key, hb = self.keys.job(job_id), self.keys.heartbeat(job_id)

        def body(pipe: Pipeline) -> Lease:
            record = self._owned(pipe, job_id, epoch, worker)
            if record is None:
                return Lease(fenced=True)
            record.heartbeat_at = record.updated_at = utcnow()
            if progress is not None:
                record.progress = progress
            pipe.multi()
            self._put(pipe, record, uuid.uuid4().hex)
            pipe.set(hb, f"{worker.node}:{worker.pid}", px=_ms(self.limits.heartbeat_ttl_s))
            return Lease(cancel_requested=record.cancel_requested)

        return self._transact(body, key)

    def end_chunk(self, job_id: str, epoch: int, worker: WorkerIdentity, detail: str = "") -> JobRecord:
        """The chunk reached its deadline: move the job to the next epoch (the caller sends its message)."""
        op = uuid.uuid4().hex

        def body(pipe: Pipeline) -> JobRecord:
            current = self._read(pipe, job_id)
            if self._already(current, op):
                return current
            record = self._owned(pipe, job_id, epoch, worker)
            if record is None:
                raise Fenced(f"{job_id}: epoch {epoch} is no longer owned by {worker.node} pid {worker.pid}")
            return self._queue_next(pipe, record, JobEventKind.CHUNK_ENDED, detail, op)

        return self._transact(body, self.keys.job(job_id))

    def finish(self, job_id: str, epoch: int, worker: WorkerIdentity, state: JobState, *,
               result: JobResult | None = None, error: str | None = None) -> JobRecord:
        """Record the job's terminal ``state`` (only the chunk that owns the job may)."""
        if not state.terminal:
            raise ValueError(f"{state} is not a terminal state")
        op = uuid.uuid4().hex

        def body(pipe: Pipeline) -> JobRecord:
            current = self._read(pipe, job_id)
            if self._already(current, op):
                return current
            record = self._owned(pipe, job_id, epoch, worker)
            if record is None:
                raise Fenced(f"{job_id}: epoch {epoch} is no longer owned by {worker.node} pid {worker.pid}")
            holder = self._watch_lock(pipe, record)
            new = record.with_event(JobEventKind.FINISHED, state.value, state=state, owner=None, owner_pid=None,
                                    finished_at=utcnow(), result=result, error=error)
            pipe.multi()
            self._terminal(pipe, new, holder, op)
            return new

        record = self._transact(body, self.keys.job(job_id))
        self._expire_run_lines(job_id)
        return record

    # -- the users' side -------------------------------------------------------------------------
    def request_cancel(self, job_id: str) -> tuple[CancelOutcome, JobRecord | None]:
        """Cancel a job: at once when no chunk runs (a queued job's message is then dropped unrun), else
        by flag (the running chunk sees it at its next heartbeat and stops between candidates)."""
        check_job_id(job_id)
        op = uuid.uuid4().hex

        def body(pipe: Pipeline) -> tuple[CancelOutcome, JobRecord | None]:
            record = self._read(pipe, job_id)
            if self._already(record, op):
                return (CancelOutcome(self._outcome_written(record)), record)
            if record is None:
                return CancelOutcome.NOT_FOUND, None
            if record.state.terminal:
                return CancelOutcome.FINISHED, record
            if record.owner is None:
                holder = self._watch_lock(pipe, record)
                new = self._cancelled(record, "cancelled by request before it ran" if record.chunks == 0
                                      else "cancelled by request between chunks", job_id)
                pipe.multi()
                self._terminal(pipe, new, holder, f"{op}:{CancelOutcome.CANCELLED.value}")
                return CancelOutcome.CANCELLED, new
            if record.cancel_requested:
                return CancelOutcome.REQUESTED, record
            new = record.with_event(JobEventKind.CANCEL_REQUESTED, "the running chunk stops at its next candidate",
                                    cancel_requested=True)
            pipe.multi()
            self._put(pipe, new, f"{op}:{CancelOutcome.REQUESTED.value}")
            return CancelOutcome.REQUESTED, new

        outcome, record = self._transact(body, self.keys.job(job_id))
        if outcome is CancelOutcome.CANCELLED:
            self._expire_run_lines(job_id)
        return outcome, record

    def update(self, job_id: str, change: Callable[[JobRecord], JobRecord]) -> JobRecord | None:
        """Apply ``change`` to the record atomically (the bot's links and ``published`` flag); applied once
        even when a dropped connection makes the store retry."""
        check_job_id(job_id)
        op = uuid.uuid4().hex

        def body(pipe: Pipeline) -> JobRecord | None:
            record = self._read(pipe, job_id)
            if record is None or self._already(record, op):
                return record
            new = change(record.model_copy(deep=True))
            new.updated_at = utcnow()
            pipe.multi()
            self._put(pipe, new, op)
            return new

        return self._transact(body, self.keys.job(job_id))

    # -- the reaper ------------------------------------------------------------------------------
    def active_ids(self) -> builtins.list[str]:
        return sorted(text(i) for i in self._retry(lambda: self.client.smembers(self.keys.active)))

    def reap_one(self, job_id: str) -> ReapResult:
        """Look at one active job and recover it if its chunk died (see ``lifecycle.reap_action``)."""
        key, hb, dispatching = self.keys.job(job_id), self.keys.heartbeat(job_id), self.keys.dispatching(job_id)
        op = uuid.uuid4().hex

        def body(pipe: Pipeline) -> ReapResult:
            record = self._read(pipe, job_id)
            if self._already(record, op):
                return ReapResult(job_id=job_id, action=ReapAction(self._outcome_written(record)), record=record)
            action = reap_action(record, lease_alive=bool(pipe.exists(hb)), dispatching=bool(pipe.exists(dispatching)),
                                 max_recoveries=self.limits.max_recoveries)
            tag = f"{op}:{action.value}"
            if record is None or action is ReapAction.FORGET:  # reap_action forgets every missing record
                pipe.multi()
                pipe.srem(self.keys.active, job_id)
                return ReapResult(job_id=job_id, action=action, record=record)
            if action is ReapAction.RECOVER:
                new = self._queue_next(pipe, record, JobEventKind.RECOVERED,
                                       f"no heartbeat from {record.owner} pid {record.owner_pid} for"
                                       f" {self.limits.heartbeat_ttl_s:g}s", tag, recoveries=record.recoveries + 1)
                return ReapResult(job_id=job_id, action=action, record=new)
            if action is ReapAction.REDISPATCH:
                new = self._queue_next(pipe, record, JobEventKind.REDISPATCHED,
                                       "the chunk message was never confirmed sent", tag)
                return ReapResult(job_id=job_id, action=action, record=new)
            if action in (ReapAction.CANCEL, ReapAction.FAIL):
                holder = self._watch_lock(pipe, record)
                if action is ReapAction.CANCEL:
                    new = self._cancelled(record, "cancelled by request (its worker stopped before it could"
                                          " record the cancel)", job_id)
                else:
                    reason = (f"the workers running this job died {record.recoveries + 1} times (last: {record.owner}"
                              f" pid {record.owner_pid}); it may crash its worker (memory, a hung GPU): look at the"
                              " worker's log, then submit it again with a smaller budget or raise"
                              " KERNELEVO_QUEUE_MAX_RECOVERIES")
                    new = record.with_event(JobEventKind.FINISHED, "failed", state=JobState.FAILED, owner=None,
                                            owner_pid=None, finished_at=utcnow(), error=reason)
                pipe.multi()
                self._terminal(pipe, new, holder, tag)
                return ReapResult(job_id=job_id, action=action, record=new)
            return ReapResult(job_id=job_id, action=action, record=record)

        result = self._transact(body, key, hb, dispatching)
        if result.action in (ReapAction.CANCEL, ReapAction.FAIL):
            self._expire_run_lines(job_id)
        return result

    def take_reaper_turn(self, node: str, interval_s: float) -> bool:
        """True for the one caller per interval that should run the reaper (across all workers)."""
        return bool(self._retry(lambda: self.client.set(self.keys.reaper_tick, node, nx=True,
                                                        px=_ms(interval_s * 0.9))))
