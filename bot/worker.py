"""The bot-queue worker (``kernelevo bot-worker``, or the child ``kernelevo serve`` starts).

A Celery worker on the ``bot`` queue of the worker tier's app, with a thread pool (the tasks wait on
GitHub, not on a CPU), holding the App's key. A step in it sends :data:`~bot.tasks.BOT_RECONCILE_TASK`
once when it starts (what a restart left unreported gets reported) and then, every ``tick_s``, the
reconcile and sweep tasks — only the process that takes the tick's turn in Redis sends them, so any
number of bot workers make one scheduler (this is the single-instance lock; no ``celery beat`` needed).
The worker tier's reaper also runs in it (``workflows.celery_app.ReaperStep``).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from celery import bootsteps

from workflows.models import QueueName

log = logging.getLogger(__name__)

TICK_S = 60.0


@dataclass(frozen=True)
class BotWorkerPlan:
    node: str
    argv: list[str]


def plan_bot_worker(*, hostname: str, pid: int, concurrency: int, loglevel: str = "info",
                    name: str | None = None) -> BotWorkerPlan:
    """The ``celery worker`` arguments of a bot worker (pure)."""
    node = name or f"bot-{pid}@{hostname}"
    if "@" not in node:
        node = f"{node}@{hostname}"
    argv = ["worker", "--queues", QueueName.BOT.value, "--hostname", node, "--pool", "threads",
            "--concurrency", str(max(1, concurrency)), "--prefetch-multiplier", "1", "--without-gossip",
            "--without-mingle", "--loglevel", loglevel]
    return BotWorkerPlan(node=node, argv=argv)


class TickStep(bootsteps.StartStopStep):  # type: ignore[misc]  # Celery has no type hints
    """Sends the reconcile task at start, then reconcile and sweep every tick (one process per tick)."""

    tick_s = TICK_S

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, worker: Any) -> None:
        from bot import tasks

        app, node = worker.app, worker.hostname

        def loop() -> None:
            first = True
            while True:
                try:
                    state = tasks.context().state
                    if first or state.take_turn("reconcile", node, self.tick_s):
                        app.send_task(tasks.BOT_RECONCILE_TASK, queue=QueueName.BOT.value)
                    if state.take_turn("sweep", node, self.tick_s):
                        app.send_task(tasks.BOT_SWEEP_TASK, queue=QueueName.BOT.value)
                    first = False
                except Exception as exc:  # Redis down: try again next tick
                    log.warning("bot tick: %s: %s", type(exc).__name__, exc)
                if self._halt.wait(self.tick_s):
                    return

        self._thread = threading.Thread(target=loop, name="kernelevo-bot-tick", daemon=True)
        self._thread.start()

    def stop(self, worker: Any) -> None:
        self._halt.set()

    shutdown = stop


def run_bot_worker(settings: Any, *, device: str, loglevel: str = "info", name: str | None = None,
                   tick_s: float = TICK_S) -> None:
    """Build the context, register the tasks and the tick, and run the Celery worker (blocks)."""
    import os
    import socket

    from bot import service, tasks
    from workflows.celery_app import app

    tasks.configure(service.worker_context(settings, device=device, celery_app=app))
    TickStep.tick_s = tick_s
    app.steps["worker"].add(TickStep)
    plan = plan_bot_worker(hostname=socket.gethostname(), pid=os.getpid(), concurrency=settings.bot_workers,
                           loglevel=loglevel, name=name)
    log.info("kernelevo bot worker %s: device %s for jobs, tick %gs", plan.node, device, tick_s)
    app.worker_main(plan.argv)
