"""Who may use the GPU while candidates are evaluated side by side.

Several evaluations of one session can run at once (their correctness checks are mostly process and
host work; the GPU idles through them), but a candidate being timed must have the GPU alone: its
checks and the reference comparisons of the others wait, and a timing run waits for the checks in
flight to finish. A readers-writer lock that prefers the writer, so timing is never starved.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class GpuPhases:
    """``shared()`` around GPU work that may overlap; ``exclusive()`` around timing."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._sharing = 0
        self._exclusive = False
        self._waiting_exclusive = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            while self._exclusive or self._waiting_exclusive:
                self._cond.wait()
            self._sharing += 1
        try:
            yield
        finally:
            with self._cond:
                self._sharing -= 1
                self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._waiting_exclusive += 1
            while self._exclusive or self._sharing:
                self._cond.wait()
            self._waiting_exclusive -= 1
            self._exclusive = True
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()
