"""Calls to a remote endpoint that an interrupted run can walk away from.

A ``ThreadPoolExecutor``'s threads are joined when the interpreter exits, and closing an HTTP client does not wake
a thread blocked reading a reply: a Ctrl-C during a slow chat request held ``kernelevo optimize`` open (its resume
hint already printed) until the request timed out, minutes later. Here each call runs in a daemon thread, at most
``limit`` at once; :meth:`RequestThreads.abort` fails every call not yet answered, so whoever waits on one wakes at
once, and the interpreter does not wait for the threads still blocked on the network.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from typing import Any, TypeVar

T = TypeVar("T")


class CallsAborted(RuntimeError):
    """The run was interrupted before the endpoint answered."""


class RequestThreads:
    """``submit(fn, *args)`` -> a Future, run in a daemon thread; at most ``limit`` calls run at once."""

    def __init__(self, limit: int, name: str) -> None:
        self._slots = threading.BoundedSemaphore(max(1, limit))
        self._name = name
        self._lock = threading.Lock()
        self._open: set[Future[Any]] = set()
        self._aborted = False

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            if self._aborted:
                raise CallsAborted("the run was interrupted: no new requests")
            self._open.add(future)
        threading.Thread(target=self._run, args=(future, fn, args), name=self._name, daemon=True).start()
        return future

    def _run(self, future: Future[T], fn: Callable[..., T], args: tuple[Any, ...]) -> None:
        try:
            with self._slots:
                if not future.set_running_or_notify_cancel():
                    return
                try:
                    result = fn(*args)
                except BaseException as exc:  # noqa: BLE001 - handed to whoever waits on the future
                    _settle(future, exc=exc)
                else:
                    _settle(future, result=result)
        finally:
            with self._lock:
                self._open.discard(future)

    def abort(self) -> None:
        """Fail every call not yet answered (queued ones are cancelled) and refuse new ones."""
        with self._lock:
            self._aborted = True
            pending = list(self._open)
        for future in pending:
            if not future.cancel():
                _settle(future, exc=CallsAborted("the run was interrupted before the endpoint answered"))

    def wait(self) -> None:
        """Wait for every call submitted so far (a normal close)."""
        with self._lock:
            pending = list(self._open)
        for future in pending:
            try:
                future.exception()
            except BaseException:  # noqa: BLE001 - cancelled: nothing to wait for
                pass


def _settle(future: Future[Any], result: Any = None, exc: BaseException | None = None) -> None:
    """Set a future's outcome unless :meth:`RequestThreads.abort` already did."""
    try:
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(result)
    except InvalidStateError:
        pass
