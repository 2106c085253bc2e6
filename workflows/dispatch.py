"""Sending Celery messages: chunk tasks on the device queues, notifications on the bot queue.

Task names are the contract between the tiers: the GPU workers implement :data:`CHUNK_TASK` (and
:data:`REAP_TASK`); the bot side will implement :data:`BOT_PUBLISH_TASK` and
:data:`BOT_PROGRESS_TASK`, each taking one argument, the job id (it reads everything else from the
store). Messages are sent by name, so a sender needs no task code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from workflows.models import OriginKind, QueueName

if TYPE_CHECKING:
    from celery import Celery

CHUNK_TASK = "kernelevo.search_chunk"  # (job_id: str, epoch: int)
REAP_TASK = "kernelevo.reap"  # ()
BOT_PUBLISH_TASK = "kernelevo.bot.publish"  # (job_id: str): the job reached a terminal state
BOT_PROGRESS_TASK = "kernelevo.bot.report_progress"  # (job_id: str): the job started or continued a chunk

# kombu's publish retries (through a Redis restart); the CLI has checked Redis before it sends.
PUBLISH_RETRY = {"max_retries": 20, "interval_start": 0.2, "interval_step": 0.5, "interval_max": 3.0}


def chunk_task_id(job_id: str, epoch: int) -> str:
    """Deterministic task ids: a chunk message names its job and epoch (logs, ``celery inspect``)."""
    return f"{job_id}-e{epoch}"


class Dispatcher(Protocol):
    """Sends the worker tier's messages (Celery here; the store never sends any itself)."""

    def send_chunk(self, job_id: str, epoch: int, device: str, countdown_s: float = 0.0) -> None: ...

    def notify_bot(self, task: str, job_id: str, origin: OriginKind) -> None: ...


class CeleryDispatcher:
    """A :class:`Dispatcher` over a Celery app (``workflows.celery_app.make_app``)."""

    def __init__(self, app: Celery) -> None:
        self.app = app

    def send_chunk(self, job_id: str, epoch: int, device: str, countdown_s: float = 0.0) -> None:
        self.app.send_task(CHUNK_TASK, args=[job_id, epoch], queue=QueueName.for_device(device).value,
                           task_id=chunk_task_id(job_id, epoch), countdown=countdown_s or None,
                           retry=True, retry_policy=PUBLISH_RETRY)

    def notify_bot(self, task: str, job_id: str, origin: OriginKind) -> None:
        """Only jobs the bot asked for (PR, sweep) are reported to it; CLI jobs are read with ``jobs show``."""
        if origin is OriginKind.CLI:
            return
        self.app.send_task(task, args=[job_id], queue=QueueName.BOT.value, retry=True, retry_policy=PUBLISH_RETRY)
