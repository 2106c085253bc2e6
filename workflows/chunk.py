"""One chunk of a job's search, run in a worker's fresh child process.

Claim the job's current epoch; unpack the repository tarball into the chunk's work folder
(:mod:`workflows.workdirs`: locked while the chunk lives, swept after each chunk once its owner is gone);
rebuild the run directory from its copy in Redis; call ``run_search(..., resume=True)`` with every
write mirrored back to Redis; stop at the first candidate boundary after ``queue_chunk_s`` (or at a
cancel); then queue the next chunk or record the terminal state. A thread renews the chunk's lease
and brings back the cancel flag. Nothing from the repository is imported or run here: the op is found
by static discovery and the evaluator runs the code in its own (sandboxed) processes.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelevo.search.rundir import mirrored
from workflows.client import JobsClient
from workflows.dispatch import BOT_PROGRESS_TASK, BOT_PUBLISH_TASK
from workflows.lifecycle import chunk_end, chunk_should_stop, search_outcome
from workflows.mirror import RedisRunMirror, RunTooLarge
from workflows.models import ChunkEnd, ClaimOutcome, JobProgress, JobRecord, JobState, WorkerIdentity
from workflows.redis_conn import TRANSIENT, QueueUnavailable
from workflows.repo_tarball import unpack_repo
from workflows.store import BlobError, Fenced, JobStore, result_from_summary
from workflows.untar import TarballError
from workflows.workdirs import chunk_workdir, sweep_workdirs

log = logging.getLogger(__name__)


class SetupFailure(Exception):
    """The search cannot start for a reason the user can act on; the message says which and what to do."""


def worker_device() -> str:
    """The device this worker serves: ``KERNELEVO_WORKER_DEVICE`` (set by ``kernelevo worker``), else what
    torch sees (only ever asked in the chunk's child process, never in the worker's parent)."""
    device = os.environ.get("KERNELEVO_WORKER_DEVICE", "")
    if device in ("cpu", "cuda"):
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def job_progress(progress: Any) -> JobProgress:
    """The record's progress from a search ``Progress`` snapshot."""
    fields = {name: getattr(progress, name) for name in JobProgress.model_fields if hasattr(progress, name)}
    return JobProgress(**fields)


class LeaseKeeper(threading.Thread):
    """Renews the chunk's lease every ``interval`` s, with the latest progress; raises the ``fenced`` and
    ``cancel_requested`` flags the search's ``should_cancel`` reads."""

    def __init__(self, store: JobStore, job_id: str, epoch: int, worker: WorkerIdentity, interval: float) -> None:
        super().__init__(name=f"lease-{job_id}", daemon=True)
        self.store, self.job_id, self.epoch, self.worker, self.interval = store, job_id, epoch, worker, interval
        self.fenced = threading.Event()
        self.cancel_requested = threading.Event()
        self._halt = threading.Event()
        self._progress: JobProgress | None = None
        self._lock = threading.Lock()

    def set_progress(self, progress: JobProgress) -> None:
        with self._lock:
            self._progress = progress

    def beat(self) -> None:
        with self._lock:
            progress, self._progress = self._progress, None
        lease = self.store.heartbeat(self.job_id, self.epoch, self.worker, progress)
        if lease.fenced:
            self.fenced.set()
        if lease.cancel_requested:
            self.cancel_requested.set()

    def run(self) -> None:
        while not self._halt.wait(self.interval) and not self.fenced.is_set():
            try:
                self.beat()
            except Exception as exc:  # Redis down past the retries: the lease may lapse; the reaper decides
                log.warning("%s: heartbeat failed (%s: %s)", self.job_id, type(exc).__name__, exc)

    def stop(self) -> None:
        """Stop renewing, after one last beat that records the final progress."""
        self._halt.set()
        self.join()
        if not self.fenced.is_set():
            try:
                self.beat()
            except Exception as exc:
                log.warning("%s: last heartbeat failed (%s: %s)", self.job_id, type(exc).__name__, exc)


@dataclass
class Prepared:
    workspace: Path
    run_dir: Path
    mirror: RedisRunMirror
    task_path: Path
    proposer: Any
    budget: Any
    config: Any


class Chunk:
    """A claimed chunk: :meth:`run` searches until the deadline and records how it ended."""

    def __init__(self, jobs: JobsClient, settings: Any, record: JobRecord, worker: WorkerIdentity,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.jobs, self.store, self.settings = jobs, jobs.store, settings
        self.record, self.spec, self.worker, self.clock = record, record.spec, worker, clock

    def run(self) -> ChunkEnd:
        deadline = self.clock() + self.settings.queue_chunk_s
        lease = LeaseKeeper(self.store, self.record.id, self.record.epoch, self.worker,
                            self.settings.queue_heartbeat_s)
        lease.start()
        prepared: Prepared | None = None
        with chunk_workdir(self.record.id) as workdir:
            try:
                prepared = self._prepare(workdir)
                result = self._search(prepared, lease, deadline)
            except Fenced as exc:
                log.warning("%s: %s; this chunk stops without writing", self.record.id, exc)
                return ChunkEnd.FENCED
            except (*TRANSIENT, QueueUnavailable):
                raise  # Redis is gone: nothing can be recorded; the lease lapses and the reaper re-queues the job
            except SetupFailure as exc:
                return self._fail(str(exc), lease)
            except (RunTooLarge, BlobError, TarballError) as exc:
                return self._fail(str(exc), lease)
            except Exception as exc:
                from evaluator import EvalSetupError

                if isinstance(exc, EvalSetupError):
                    return self._fail(f"the task for {self.spec.op_id} could not be built: {exc}", lease)
                log.exception("%s: the search failed", self.record.id)
                return self._fail(f"the search failed ({type(exc).__name__}: {exc}); this is a KernelEvo bug if the"
                                  " message does not point at the op: report it with the job id", lease)
            finally:
                if prepared is not None:
                    prepared.mirror.close()
                    close = getattr(prepared.proposer, "close", None)
                    if callable(close):
                        close()
                if lease.is_alive():
                    lease.stop()
        end = chunk_end(result.stop_reason, cancel_requested=lease.cancel_requested.is_set(),
                        fenced=lease.fenced.is_set())
        try:
            return self._record_end(end, result)
        except Fenced as exc:
            log.warning("%s: %s; the chunk's end is not recorded", self.record.id, exc)
            return ChunkEnd.FENCED

    def _record_end(self, end: ChunkEnd, result: Any) -> ChunkEnd:
        job_id, epoch = self.record.id, self.record.epoch
        if end is ChunkEnd.CONTINUE:
            record = self.store.end_chunk(job_id, epoch, self.worker,
                                          f"chunk {self.record.chunks}: {result.candidates_evaluated} evaluated so far")
            self.jobs.dispatch(record)
        elif end is ChunkEnd.FINISHED:
            state = search_outcome(result.stop_reason, result.best, self.spec.device)
            self.store.finish(job_id, epoch, self.worker, state, result=result_from_summary(result.to_dict()))
            self._notify(BOT_PUBLISH_TASK)
        elif end is ChunkEnd.CANCELLED:
            self.store.finish(job_id, epoch, self.worker, JobState.CANCELLED,
                              result=result_from_summary(result.to_dict()), error="cancelled by request")
            self._notify(BOT_PUBLISH_TASK)
        return end

    def _fail(self, message: str, lease: LeaseKeeper) -> ChunkEnd:
        if lease.is_alive():
            lease.stop()
        if lease.fenced.is_set():
            return ChunkEnd.FENCED
        log.warning("%s failed: %s", self.record.id, message)
        try:
            self.store.finish(self.record.id, self.record.epoch, self.worker, JobState.FAILED, error=message)
        except Fenced:
            return ChunkEnd.FENCED
        self._notify(BOT_PUBLISH_TASK)
        return ChunkEnd.FAILED

    def _notify(self, task: str) -> None:
        try:
            self.jobs.dispatcher.notify_bot(task, self.record.id, self.spec.origin.kind)
        except Exception:
            log.exception("%s: could not notify the bot", self.record.id)

    def _prepare(self, tmp: Path) -> Prepared:
        from kernelevo.search.budget import Budget
        from kernelevo.search.config import SearchConfig
        from kernelevo.search.proposers import ProposerError, make_proposer
        from kernelevo.search.targets import task_in_checkout

        spec, settings = self.spec, self.settings
        workspace = unpack_repo(self.store.get_blob(spec.source), tmp / "repo",
                                max_unpacked_bytes=settings.queue_unpack_max_bytes,
                                max_files=settings.queue_unpack_max_files)
        run_dir = tmp / "run"
        mirror = RedisRunMirror.restore(self.store.client, self.store.keys, self.record.id, self.record.epoch,
                                        self.worker, run_dir, max_bytes=settings.queue_run_max_bytes,
                                        redis_retry_s=settings.queue_redis_retry_s)
        try:
            task_path = task_in_checkout(workspace, spec.op_id, run_dir)
        except (FileNotFoundError, LookupError) as exc:
            raise SetupFailure(f"op not found at commit {spec.commit_sha[:12]}: {exc}") from None
        wanted = spec.endpoint
        if wanted and spec.proposer != "offline" and wanted != settings.llm_endpoint_name:
            raise SetupFailure(f"the repository's config asks for the LLM endpoint {wanted!r}, but worker "
                               f"{self.worker.node} serves {settings.llm_endpoint_name!r} "
                               "(KERNELEVO_LLM_ENDPOINT_NAME): run a worker for that endpoint or change `endpoint:`")
        try:
            proposer = make_proposer(None if spec.proposer == "auto" else spec.proposer, model=spec.model)
        except ProposerError as exc:
            raise SetupFailure(f"the {spec.proposer} proposer cannot run on worker {self.worker.node}: {exc}") from None
        config = SearchConfig(**{k: v for k, v in spec.shape.model_dump().items() if v is not None})
        return Prepared(workspace, run_dir, mirror, task_path, proposer, Budget(**spec.budgets.model_dump()), config)

    def _search(self, prepared: Prepared, lease: LeaseKeeper, deadline: float) -> Any:
        from kernelevo.search.api import run_search

        new_candidates = 0

        def on_progress(progress: Any) -> None:
            nonlocal new_candidates
            if progress.event == "candidate" and not (progress.last or {}).get("replayed"):
                new_candidates += 1
            lease.set_progress(job_progress(progress))

        def should_cancel() -> bool:
            return chunk_should_stop(now=self.clock(), deadline=deadline, new_candidates=new_candidates,
                                     cancel_requested=lease.cancel_requested.is_set(), fenced=lease.fenced.is_set())

        spec = self.spec
        with mirrored(prepared.run_dir, prepared.mirror):
            result = run_search(prepared.task_path, op_id=spec.op_id, backend=spec.backend, proposer=prepared.proposer,
                                budget=prepared.budget, device=spec.device, run_dir=prepared.run_dir, seed=spec.seed,
                                on_progress=on_progress, should_cancel=should_cancel, resume=True,
                                config=prepared.config)
        if lease.fenced.is_set():
            raise Fenced(f"{self.record.id}: the job was re-queued while this chunk ran")
        return result


def run_chunk(job_id: str, epoch: int, node: str, *, settings: Any | None = None,
              jobs: JobsClient | None = None) -> ChunkEnd | ClaimOutcome:
    """Handle one chunk message: claim it, then run it, re-queue it, or drop it (see ``ClaimOutcome``)."""
    if settings is None:
        from kernelevo.settings import get_settings

        settings = get_settings()
    jobs = jobs or JobsClient.from_settings(settings, check=False)
    worker = WorkerIdentity(node=node, pid=os.getpid(), device=worker_device())
    claim = jobs.store.claim(job_id, epoch, worker, lock_retry_s=settings.queue_lock_retry_s)
    log.info("%s epoch %d on %s: %s", job_id, epoch, node, claim.outcome.value)
    record = claim.record
    if record is None:  # MISSING: the job expired or never existed, nothing to run or re-queue
        return claim.outcome
    if claim.outcome is ClaimOutcome.WAIT_LOCK:
        jobs.dispatch(record, countdown_s=settings.queue_lock_retry_s)
    elif claim.outcome is ClaimOutcome.WRONG_DEVICE:
        log.error("%s needs a %s worker but reached %s (a %s worker): check the workers' --queues", job_id,
                  record.spec.device, node, worker.device)
        jobs.dispatch(record, countdown_s=settings.queue_lock_retry_s)
    elif claim.outcome is ClaimOutcome.CANCEL:
        jobs.dispatcher.notify_bot(BOT_PUBLISH_TASK, job_id, record.spec.origin.kind)
    if claim.outcome is not ClaimOutcome.RUN:
        return claim.outcome
    try:
        jobs.dispatcher.notify_bot(BOT_PROGRESS_TASK, job_id, record.spec.origin.kind)
    except Exception:
        log.exception("%s: could not notify the bot", job_id)
    try:
        return Chunk(jobs, settings, record, worker).run()
    finally:
        sweep_workdirs(jobs.store)  # this chunk's folder is gone already; others' that died before it
