"""Evaluations in flight: up to N candidates judged at once, their results taken in submission order.

The verifier's checks are mostly process and host work during which the GPU idles; with several
evaluations in flight the session keeps timing exclusive (``evaluator.gpu_phases``) while the
others' checks overlap. Results are absorbed strictly in the order the candidates were submitted,
so the population, the best kernel and every counter are the same as with one at a time (given a
deterministic proposer); only the archive's line order may differ, and resume reads it by id.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from typing import Any

Record = dict[str, Any]
BACKLOG = 4  # finished results that may wait behind a slow one, per slot


class EvaluationWindow:
    """Runs ``judge()`` calls on up to ``size`` threads; ``absorb`` sees each record in submission order.

    ``submit(judge, key)``: ``key`` (a source hash) marks candidates whose judging must wait for an
    earlier one with the same key to be absorbed (a duplicate is judged from the original's record).
    """

    def __init__(self, size: int, absorb: Callable[[Record], None]) -> None:
        self.size = max(1, size)
        self._absorb = absorb
        self._pool = ThreadPoolExecutor(max_workers=self.size, thread_name_prefix="evaluate") if self.size > 1 else None
        self._queue: deque[tuple[Future[Record] | None, Callable[[], Record], str | None]] = deque()
        self._keys: dict[str, int] = {}  # key -> evaluations in flight with it

    @property
    def pending(self) -> int:
        """Candidates submitted and not yet absorbed."""
        return len(self._queue)

    def submit(self, judge: Callable[[], Record], key: str | None = None) -> None:
        """Judge a candidate (now, or on a thread) as soon as fewer than ``size`` are running.

        Finished results are absorbed in submission order as they become absorbable; one slow candidate
        at the head does not keep the other slots empty (up to ``BACKLOG`` x ``size`` finished results wait
        behind it)."""
        if self._pool is None:
            self._absorb(judge())
            return
        while True:
            self._absorb_finished()
            running = [future for future, _, _ in self._queue if future is not None and not future.done()]
            if len(running) < self.size and len(self._queue) < self.size * BACKLOG:
                break
            if len(self._queue) >= self.size * BACKLOG:
                self._take_oldest()
            else:
                wait_futures(running, return_when=FIRST_COMPLETED)
        if key is not None and self._keys.get(key):
            self._queue.append((None, judge, None))  # same source as one in flight: judged once that one is in
            return
        if key is not None:
            self._keys[key] = self._keys.get(key, 0) + 1
        self._queue.append((self._pool.submit(judge), judge, key))

    def drain(self) -> None:
        """Absorb everything in flight (the generation ends, or the loop stops)."""
        while self._queue:
            self._take_oldest()

    def close(self) -> None:
        """Wait for the threads (after a drain, or when unwinding an error)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def _absorb_finished(self) -> None:
        """Absorb the head of the queue while it is ready (finished, or a duplicate whose original is in)."""
        while self._queue and (self._queue[0][0] is None or self._queue[0][0].done()):
            self._take_oldest()

    def _take_oldest(self) -> None:
        future, judge, key = self._queue.popleft()
        try:
            record = judge() if future is None else future.result()
        finally:
            if key is not None:
                self._keys[key] -= 1
        self._absorb(record)
