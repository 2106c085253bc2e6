"""Evaluations in flight: up to N candidates judged at once, their results taken in submission order.

The verifier's checks are mostly process and host work during which the GPU idles; with several
evaluations in flight the session keeps timing exclusive (``evaluator.gpu_phases``) while the
others' checks overlap. Results are absorbed strictly in the order the candidates were submitted,
and only up to a *fence* (a generation number): the next generation's candidates may already run
while the current one's last results come in, but their results wait until the loop has closed the
current generation and planned from it. So the population, the best kernel and every counter are the
same as with one at a time (given a deterministic proposer); only the archive's line order may differ,
and resume reads it by id.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass
from typing import Any

Record = dict[str, Any]
BACKLOG = 4  # finished results that may wait behind a slow one, per slot


@dataclass
class _Entry:
    future: Future[Record] | None  # None: judged when it reaches the head (a duplicate of one in flight)
    judge: Callable[[], Record]
    key: str | None
    tag: int


class EvaluationWindow:
    """Runs ``judge()`` calls on up to ``size`` threads; ``absorb`` sees each record in submission order,
    for entries whose tag is at most :attr:`fence` (None: no fence).

    ``submit(judge, key, tag)``: ``key`` (a source hash) marks candidates whose judging must wait for an
    earlier one with the same key to be absorbed (a duplicate is judged from the original's record).
    """

    def __init__(self, size: int, absorb: Callable[[Record], None]) -> None:
        self.size = max(1, size)
        self.fence: int | None = None
        self._absorb = absorb
        self._pool = ThreadPoolExecutor(max_workers=self.size, thread_name_prefix="evaluate") if self.size > 1 else None
        self._queue: deque[_Entry] = deque()
        self._keys: dict[str, int] = {}  # key -> evaluations in flight with it

    @property
    def pending(self) -> int:
        """Candidates submitted and not yet absorbed."""
        return len(self._queue)

    def submit(self, judge: Callable[[], Record], key: str | None = None, tag: int = 0) -> None:
        """Judge a candidate (now, or on a thread) as soon as fewer than ``size`` are running.

        Finished results are absorbed as they become absorbable; one slow candidate at the head does not
        keep the other slots empty (up to ``BACKLOG`` x ``size`` finished results wait behind it)."""
        if self._pool is None:
            self._absorb(judge())
            return
        while True:
            self._absorb_finished()
            running = [e.future for e in self._queue if e.future is not None and not e.future.done()]
            if len(running) < self.size and len(self._queue) < self.size * BACKLOG:
                break
            if len(self._queue) >= self.size * BACKLOG and self._absorbable(self._queue[0]):
                self._take_oldest()
            elif running:
                wait_futures(running, return_when=FIRST_COMPLETED)
            else:  # everything left is behind the fence: the caller moves it
                break
        if key is not None and self._keys.get(key):
            self._queue.append(_Entry(None, judge, None, tag))  # judged once the one in flight is absorbed
            return
        if key is not None:
            self._keys[key] = self._keys.get(key, 0) + 1
        self._queue.append(_Entry(self._pool.submit(judge), judge, key, tag))

    def absorbed_through(self, tag: int) -> bool:
        """Whether every entry tagged ``tag`` or earlier has been absorbed (absorbing what is ready first)."""
        self._absorb_finished()
        return not any(e.tag <= tag for e in self._queue)

    def drain(self) -> None:
        """Absorb everything in flight up to the fence, waiting for it."""
        while self._queue and self._absorbable(self._queue[0]):
            self._take_oldest()

    def discard(self) -> int:
        """Drop what is left (behind the fence, the loop has stopped): wait for running judges, absorb
        nothing. Returns how many were dropped."""
        dropped = len(self._queue)
        futures = [e.future for e in self._queue if e.future is not None]
        self._queue.clear()
        self._keys.clear()
        wait_futures(futures)
        return dropped

    def close(self) -> None:
        """Wait for the threads (after a drain, or when unwinding an error)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def _absorbable(self, entry: _Entry) -> bool:
        return self.fence is None or entry.tag <= self.fence

    def _absorb_finished(self) -> None:
        """Absorb the head of the queue while it is ready (finished, or a duplicate whose original is in)."""
        while self._queue and self._absorbable(self._queue[0]) and (
                self._queue[0].future is None or self._queue[0].future.done()):
            self._take_oldest()

    def _take_oldest(self) -> None:
        entry = self._queue.popleft()
        try:
            record = entry.judge() if entry.future is None else entry.future.result()
        finally:
            if entry.key is not None:
                self._keys[entry.key] -= 1
        self._absorb(record)
