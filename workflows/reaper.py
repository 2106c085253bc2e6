"""When the reaper runs: from each worker's parent process, one reap per interval across all workers.

The reaping itself is :meth:`workflows.client.JobsClient.reap` (callable directly, and the
``kernelevo.reap`` task); this only decides which worker runs it each interval. The worker calls
:meth:`Reaper.safe_tick` from its event loop's timer (see ``workflows.celery_app.ReaperStep``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workflows.client import JobsClient

log = logging.getLogger(__name__)


class Reaper:
    """Every tick, the first worker to take the interval's turn in Redis runs the reaper."""

    def __init__(self, settings: Any, node: str, app: Any) -> None:
        self.settings, self.node, self.app = settings, node, app
        self._client: JobsClient | None = None  # made at the first tick, inside the worker's event loop

    def tick(self) -> int:
        """One turn: reap if this worker takes the interval's turn; returns how many jobs were acted on."""
        if self._client is None:
            from workflows.client import JobsClient

            # No retries: this runs in the worker's event loop, which must not wait out a Redis outage here.
            self._client = JobsClient.from_settings(self.settings, check=False, redis_retry_s=0, app=self.app,
                                                  timeout_s=2.0)
        if not self._client.store.take_reaper_turn(self.node, self.settings.queue_reaper_interval_s):
            return 0
        return len(self._client.reap())

    def safe_tick(self) -> None:
        try:
            self.tick()
        except Exception as exc:  # Redis down, a bad record: try again next interval
            log.warning("reaper: %s: %s", type(exc).__name__, exc)
