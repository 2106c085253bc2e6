"""The Celery tasks the workers run. Thin: validate the message, then hand over to :mod:`workflows.chunk`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from workflows.celery_app import app
from workflows.dispatch import CHUNK_TASK, REAP_TASK

if TYPE_CHECKING:
    from celery import Task


@app.task(  # type: ignore[untyped-decorator]  # Celery has no type hints
    name=CHUNK_TASK, bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def search_chunk(self: Task, job_id: str, epoch: int) -> str:
    """Run one chunk of a job's search (at most ``queue_chunk_s``, then the next chunk is queued)."""
    from kernelevo.settings import get_settings
    from workflows.chunk import run_chunk
    from workflows.client import JobsClient
    from workflows.store import check_job_id

    settings = get_settings()
    jobs = JobsClient.from_settings(settings, check=False, app=self.app)
    outcome = run_chunk(check_job_id(job_id), int(epoch), node=self.request.hostname or "unknown",
                        settings=settings, jobs=jobs)
    return str(outcome.value)


@app.task(  # type: ignore[untyped-decorator]
    name=REAP_TASK, ignore_result=True)
def reap() -> int:
    """Re-queue jobs whose chunks died (the periodic form of ``JobsClient.reap``)."""
    from kernelevo.settings import get_settings
    from workflows.client import JobsClient

    return len(JobsClient.from_settings(get_settings(), check=False, app=app).reap())
