"""An in-process work queue with worker threads, for everything that calls GitHub.

Items that raise :class:`bot.ratelimit.Deferred` are re-scheduled after the wait GitHub asked for
(bounded number of times), so a rate limit never blocks a request or a worker for minutes. An item's
``on_done`` is called once when it is finished for good (ran, failed, or dropped after its deferrals),
which is when its webhook delivery counts as handled.

Items carry a ``key`` (the repository): at most ``max_per_key`` items of one key run at once (half the
workers by default), so one repository's slow or numerous deliveries never take every worker and another
repository's ``/kernelevo help`` is answered meanwhile.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from bot.ratelimit import Deferred

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Item:
    fn: Callable[[], None]
    name: str
    deferrals: int
    on_done: Callable[[BaseException | None], None] | None
    key: str | None = None


class WorkQueue:
    """``submit(fn)`` runs ``fn()`` on one of ``workers`` threads, after ``delay_s`` if given."""

    def __init__(self, workers: int = 4, *, max_deferrals: int = 5, max_per_key: int | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._clock, self._max_deferrals = clock, max_deferrals
        self._max_per_key = max(1, max_per_key if max_per_key is not None else workers // 2)
        self._running: dict[str, int] = {}
        self._heap: list[tuple[float, int, _Item]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._active = 0
        self._stopped = False
        self.failures: list[tuple[str, BaseException]] = []
        self._threads = [threading.Thread(target=self._loop, daemon=True, name=f"kernelevo-work-{i}")
                         for i in range(workers)]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[[], None], *, name: str = "work", delay_s: float = 0.0, deferrals: int = 0,
               on_done: Callable[[BaseException | None], None] | None = None, key: str | None = None) -> None:
        """Queue ``fn``; ``name`` appears in logs; ``on_done(error)`` runs when it is finished for good; ``key``
        (a repository) shares ``max_per_key`` running slots with the other items of that key."""
        with self._cond:
            heapq.heappush(self._heap, (self._clock() + delay_s, next(self._seq),
                                        _Item(fn, name, deferrals, on_done, key)))
            self._cond.notify_all()

    def _next(self) -> tuple[_Item | None, float | None]:
        """The earliest due item whose key has a free slot (None), and when to look again (None: when notified)."""
        now = self._clock()
        best: tuple[float, int, _Item] | None = None
        wake: float | None = None
        for entry in self._heap:
            due, _, item = entry
            if due > now:
                wake = due - now if wake is None else min(wake, due - now)
                continue
            if item.key is not None and self._running.get(item.key, 0) >= self._max_per_key:
                continue
            if best is None or entry[:2] < best[:2]:
                best = entry
        if best is None:
            return None, wake
        self._heap.remove(best)
        heapq.heapify(self._heap)
        return best[2], None

    def pending(self) -> int:
        """Items queued or running."""
        with self._cond:
            return len(self._heap) + self._active

    def join(self, timeout: float = 30.0) -> bool:
        """Wait until nothing is queued or running (True) or ``timeout`` passes (False)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._heap or self._active:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.05))
            return True

    def stop(self) -> None:
        """Stop the workers (queued items are dropped)."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        for thread in self._threads:
            thread.join(5)

    def _loop(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._stopped:
                        return
                    item, wait = self._next()
                    if item is not None:
                        break
                    self._cond.wait(0.5 if wait is None else max(0.001, min(wait, 0.5)))
                self._active += 1
                if item.key is not None:
                    self._running[item.key] = self._running.get(item.key, 0) + 1
            done = True
            error: Exception | None = None
            try:
                item.fn()
            except Deferred as exc:
                if item.deferrals < self._max_deferrals:
                    log.warning("%s deferred: %s", item.name, exc)
                    self.submit(item.fn, name=item.name, delay_s=exc.wait_s, deferrals=item.deferrals + 1,
                                on_done=item.on_done, key=item.key)
                    done = False
                else:
                    log.error("%s dropped after %d deferrals: %s", item.name, item.deferrals, exc)
                    self.failures.append((item.name, exc))
                    error = exc
            except Exception as exc:  # a failing item must not kill the worker
                log.exception("%s failed", item.name)
                self.failures.append((item.name, exc))
                error = exc
            finally:
                if done and item.on_done is not None:
                    try:
                        item.on_done(error)
                    except Exception:
                        log.exception("%s: on_done failed", item.name)
                with self._cond:
                    self._active -= 1
                    if item.key is not None:
                        self._running[item.key] -= 1
                        if not self._running[item.key]:
                            del self._running[item.key]
                    self._cond.notify_all()
