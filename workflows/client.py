"""The worker tier's front door for the bot and the CLI: submit, read, list and cancel jobs.

It holds a :class:`~workflows.store.JobStore` and a :class:`~workflows.dispatch.Dispatcher` and knows
nothing of the search: whoever submits builds a :class:`~workflows.models.JobSpec` (with the repository
uploaded as a content-addressed tarball) and reads :class:`~workflows.models.JobRecord` back.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from kernelevo.search.rundir import restore_run_dir
from workflows.dispatch import CeleryDispatcher, Dispatcher
from workflows.mirror import snapshot
from workflows.models import (
    CancelOutcome,
    JobRecord,
    JobSpec,
    JobState,
    ReapAction,
    ReapResult,
    RepoSource,
    SubmitOutcome,
)
from workflows.redis_conn import connect
from workflows.store import JobStore, StoreLimits, check_job_id

log = logging.getLogger(__name__)


class JobsClient:
    """Submit, read, list and cancel jobs; run the reaper."""

    def __init__(self, store: JobStore, dispatcher: Dispatcher) -> None:
        self.store, self.dispatcher = store, dispatcher

    @classmethod
    def from_settings(cls, settings: Any, *, check: bool = True, redis_retry_s: float | None = None,
                      app: Any = None, timeout_s: float = 5.0) -> JobsClient:
        """A client on the configured Redis; ``check`` pings it first (``QueueUnavailable`` at once).
        ``redis_retry_s``: how long to retry through an outage (0 for a command line that should fail fast).
        ``app``: the Celery app to send with (inside a worker: the worker's own). ``timeout_s``: socket timeouts."""
        if app is None:
            from workflows.celery_app import make_app

            app = make_app(settings)
        client = connect(settings.redis_url, check=check, timeout_s=timeout_s)
        store = JobStore(client, limits=StoreLimits.from_settings(settings, redis_retry_s=redis_retry_s))
        return cls(store, CeleryDispatcher(app))

    # -- submitting ------------------------------------------------------------------------------
    def upload_repo(self, tarball: bytes) -> RepoSource:
        """Store the repository tarball (content-addressed) for a :class:`JobSpec`'s ``source``."""
        return self.store.put_blob(tarball)

    def submit(self, spec: JobSpec) -> SubmitOutcome:
        """Queue a search; a duplicate (same repo, PR, op, commit) returns the existing job."""
        outcome = self.store.submit(spec)
        if outcome.created:
            self.dispatch(outcome.record)
        return outcome

    def dispatch(self, record: JobRecord, countdown_s: float = 0.0) -> None:
        """Send the chunk message of the record's current epoch and confirm it."""
        self.dispatcher.send_chunk(record.id, record.epoch, record.spec.device, countdown_s)
        self.store.confirm_dispatch(record.id, record.epoch)

    # -- reading ---------------------------------------------------------------------------------
    def get(self, job_id: str) -> JobRecord | None:
        return self.store.get(job_id)

    def list(self, states: Iterable[JobState] | None = None, limit: int = 50) -> list[JobRecord]:
        return self.store.list(states, limit)

    def find(self, repo: str, pr_number: int) -> builtins.list[JobRecord]:
        """Every job of a pull request, oldest first."""
        return self.store.find(repo, pr_number)

    def restore_run(self, job_id: str, dest: Path) -> Path:
        """Write the job's run directory (as far as it has got) into the new directory ``dest``."""
        check_job_id(job_id)
        files, _ = snapshot(self.store.client, self.store.keys, job_id)
        if not files:
            raise FileNotFoundError(f"{job_id} has no run yet (it has not started, or it expired)")
        restore_run_dir(Path(dest), files)
        return Path(dest)

    # -- changing --------------------------------------------------------------------------------
    def cancel(self, job_id: str) -> tuple[CancelOutcome, JobRecord | None]:
        """Cancel a job: a queued one at once (its chunk message is dropped unrun), a running one at its
        next candidate boundary (within the generation being judged)."""
        outcome, record = self.store.request_cancel(job_id)
        if outcome is CancelOutcome.CANCELLED and record is not None:
            self._notify_finished(record)
        return outcome, record

    def update(self, job_id: str, change: Callable[[JobRecord], JobRecord]) -> JobRecord | None:
        """Change the bot's fields of a job (links, ``published``) atomically."""
        return self.store.update(job_id, change)

    def _notify_finished(self, record: JobRecord) -> None:
        from workflows.dispatch import BOT_PUBLISH_TASK

        try:
            self.dispatcher.notify_bot(BOT_PUBLISH_TASK, record.id, record.spec.origin.kind)
        except Exception:  # the bot also reads the store; a lost notification delays, never loses, a report
            log.exception("could not notify the bot that %s finished", record.id)

    # -- recovery --------------------------------------------------------------------------------
    def reap(self) -> builtins.list[ReapResult]:
        """Re-queue every job whose chunk stopped heart-beating, or whose message was never confirmed
        sent; record as cancelled/failed what cannot go on. Returns what was done (NONE omitted)."""
        done: builtins.list[ReapResult] = []
        for job_id in self.store.active_ids():
            try:
                result = self.store.reap_one(job_id)
            except Exception:
                log.exception("reaper: could not look at %s", job_id)
                continue
            if result.action in (ReapAction.RECOVER, ReapAction.REDISPATCH) and result.record is not None:
                log.warning("reaper: %s %s (epoch %d)", job_id, result.action.value, result.record.epoch)
                self.dispatch(result.record)
            elif result.action in (ReapAction.CANCEL, ReapAction.FAIL) and result.record is not None:
                log.warning("reaper: %s -> %s", job_id, result.record.state.value)
                self._notify_finished(result.record)
            if result.action is not ReapAction.NONE:
                done.append(result)
        return done
