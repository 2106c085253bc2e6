"""The Celery app of the worker tier: Redis broker and result backend, one queue per device plus ``bot``.

``celery -A workflows.celery_app worker`` (or ``kernelevo worker``, which adds the per-GPU settings)
serves it. The configuration is read from ``kernelevo.settings`` when Celery first needs it, not at
import. Importing this module imports no torch and no CUDA: the worker's parent process only
receives messages, keeps leases honest (the reaper) and forks one fresh child per chunk.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from celery import Celery, bootsteps
from kombu import Exchange, Queue

from workflows.dispatch import BOT_PROGRESS_TASK, BOT_PUBLISH_TASK, CHUNK_TASK, REAP_TASK
from workflows.models import QueueName

if TYPE_CHECKING:
    from kombu.asynchronous.timer import Entry

    from workflows.reaper import Reaper

log = logging.getLogger(__name__)

PROCESS_MARGIN_S = 60.0  # start-up of a chunk's process, unpacking, restoring the run


def check_timings(settings: Any) -> None:
    """Refuse settings under which a healthy chunk would be redelivered or declared dead."""
    longest_chunk = settings.queue_chunk_s + settings.eval_timeout_s + PROCESS_MARGIN_S
    if settings.queue_visibility_timeout_s <= longest_chunk:
        raise ValueError(
            f"KERNELEVO_QUEUE_VISIBILITY_TIMEOUT_S ({settings.queue_visibility_timeout_s:g}) must exceed the longest"
            f" chunk: KERNELEVO_QUEUE_CHUNK_S + KERNELEVO_EVAL_TIMEOUT_S + {PROCESS_MARGIN_S:g} = {longest_chunk:g}"
            " (a chunk ends at its first candidate boundary after its deadline); raise it or shorten the chunks")
    if settings.queue_heartbeat_ttl_s < 2 * settings.queue_heartbeat_s:
        raise ValueError(
            f"KERNELEVO_QUEUE_HEARTBEAT_TTL_S ({settings.queue_heartbeat_ttl_s:g}) must be at least twice"
            f" KERNELEVO_QUEUE_HEARTBEAT_S ({settings.queue_heartbeat_s:g}), or live chunks look dead")


def celery_config(settings: Any) -> dict[str, Any]:
    """The Celery configuration for ``settings`` (pure)."""
    visibility = settings.queue_visibility_timeout_s
    return {
        "broker_url": settings.redis_url,
        "result_backend": settings.redis_url,
        "broker_transport_options": {"visibility_timeout": visibility},
        "broker_connection_retry_on_startup": True,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        # A chunk's message is acknowledged only when the chunk is done; a lost worker's goes back to the queue.
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "task_acks_on_failure_or_timeout": True,  # a failed chunk left its job to the reaper: do not redeliver
        "task_ignore_result": True,  # the job store is the record; Celery results would only duplicate it
        "result_expires": 86400,
        # A stuck chunk is killed before Redis would hand its message to a second worker.
        "task_time_limit": max(1.0, visibility - PROCESS_MARGIN_S / 2),
        # Each queue its own direct exchange: a message routed to one queue is never copied into another.
        "task_queues": [Queue(q.value, Exchange(q.value, type="direct"), routing_key=q.value) for q in QueueName],
        "task_default_queue": QueueName.BOT.value,
        "task_routes": {CHUNK_TASK: {"queue": QueueName.GPU.value}, REAP_TASK: {"queue": QueueName.BOT.value},
                        BOT_PUBLISH_TASK: {"queue": QueueName.BOT.value},
                        BOT_PROGRESS_TASK: {"queue": QueueName.BOT.value}},
        # One chunk at a time per worker, in a fresh child process each (no state, no CUDA context, carried over).
        "worker_concurrency": 1,
        "worker_prefetch_multiplier": 1,
        "worker_max_tasks_per_child": 1,
        "worker_cancel_long_running_tasks_on_connection_loss": False,  # a Redis restart must not kill chunks
        "worker_send_task_events": False,
        # For deployments that run `celery beat` (the bot side): the reaper as a periodic task on `bot`.
        "beat_schedule": {"kernelevo-reaper": {"task": REAP_TASK, "schedule": settings.queue_reaper_interval_s,
                                               "options": {"expires": settings.queue_reaper_interval_s}}},
    }


class ReaperStep(bootsteps.StartStopStep):  # type: ignore[misc]  # Celery has no type hints
    """Runs the reaper from every worker's parent process (one reap per interval across all workers), so that
    a GPU-only deployment recovers dead chunks without a ``celery beat``.

    On the worker's own timer, which its event loop drives in the main thread: never a thread of its own,
    since the parent forks a chunk process after every task and a thread caught mid-import at that moment
    leaves the child deadlocked on the import lock."""

    requires = ("celery.worker.components:Timer",)

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self.reaper: Reaper | None = None
        self.tref: Entry | None = None

    def start(self, worker: Any) -> None:
        from kernelevo.settings import get_settings
        from workflows.reaper import Reaper

        settings = get_settings()
        self.reaper = Reaper(settings, node=worker.hostname, app=worker.app)
        self.tref = worker.timer.call_repeatedly(settings.queue_reaper_interval_s, self.reaper.safe_tick)

    def stop(self, worker: Any) -> None:
        if self.tref is not None:
            self.tref.cancel()

    shutdown = stop


class WorkdirSweepStep(bootsteps.StartStopStep):  # type: ignore[misc]  # Celery has no type hints
    """Removes, when a worker starts, the work folders of chunks that died before it (a killed chunk cannot
    remove its own; ``workflows.workdirs`` says how a live one is told apart). Each chunk sweeps again when it
    ends."""

    def start(self, worker: Any) -> None:
        from kernelevo.settings import get_settings
        from workflows.client import JobsClient
        from workflows.workdirs import sweep_workdirs

        sweep_workdirs(JobsClient.from_settings(get_settings(), check=False, app=worker.app).store)


def make_app(settings: Any | None = None) -> Celery:
    """A Celery app configured from ``settings`` (None: ``get_settings()``, read when first needed)."""
    app = Celery("kernelevo", set_as_current=False, include=["workflows.tasks"])
    if settings is None:
        def lazy() -> dict[str, Any]:
            from kernelevo.settings import get_settings

            return celery_config(get_settings())

        app.add_defaults(lazy)
    else:
        app.add_defaults(celery_config(settings))
    app.steps["worker"].add(ReaperStep)
    app.steps["worker"].add(WorkdirSweepStep)
    return app


app = make_app()
