"""The parent's end of a candidate process's trace: the channel it sets up and the thread that reads it.

:class:`TraceChannel` makes the two pipes the shim expects (records out of the child, the MAC key into it),
writes a fresh random key, and says what the child's environment and inherited descriptors must hold.
:class:`TraceReader` then drains the record pipe in a thread from the moment the child starts, so the
candidate can never block on a full pipe, and hands out the records parsed so far.
"""

from __future__ import annotations

import os
import secrets
import select
import threading
from dataclasses import dataclass
from pathlib import Path

from evaluator.tracing.frames import KEY_BYTES, TraceTampered
from evaluator.tracing.records import FlushRecord, Record, RecordParser

# ~160k kernel records (an honest evaluation writes a few thousand); checking them costs ~80 us each in Python,
# so the bound also caps what a candidate that floods the channel can cost the parent (~13 s of one core).
DEFAULT_LIMIT_BYTES = 32 << 20


@dataclass(frozen=True)
class TraceSnapshot:
    """What the reader has so far: the authenticated records, the first violation, whether the channel ended."""

    records: tuple[Record, ...]
    tampered: TraceTampered | None
    ended: bool
    bytes_read: int

    @property
    def last_seq(self) -> int:
        return self.records[-1].seq if self.records else -1


class TraceReader:
    """A daemon thread that keeps reading the record pipe into memory and parses it as it arrives."""

    def __init__(self, fd: int, key: bytes, limit_bytes: int = DEFAULT_LIMIT_BYTES, name: str = "kernel-trace"):
        self._fd = fd
        self._parser = RecordParser(key)
        self._limit = limit_bytes
        self._records: list[Record] = []
        self._bytes = 0
        self._flushes = 0
        self._ended = False
        self._stop = threading.Event()
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> TraceReader:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                readable, _, _ = select.select([self._fd], [], [], 0.2)
                if not readable:
                    continue
                try:
                    chunk = os.read(self._fd, 1 << 16)
                except OSError:
                    chunk = b""
                with self._changed:
                    if not chunk:
                        self._parser.finish()
                        self._ended = True
                        self._changed.notify_all()
                        return
                    self._bytes += len(chunk)
                    if self._bytes > self._limit:
                        self._parser.refuse_more(self._limit)  # keep draining, stop keeping
                    else:
                        fresh = self._parser.feed(chunk)
                        self._records.extend(fresh)
                        self._flushes += sum(isinstance(r, FlushRecord) for r in fresh)
                    self._changed.notify_all()
        finally:
            with self._changed:
                self._ended = True
                self._changed.notify_all()

    def snapshot(self) -> TraceSnapshot:
        with self._changed:
            return TraceSnapshot(tuple(self._records), self._parser.tampered, self._ended, self._bytes)

    def wait_for_seq(self, seq: int, timeout_s: float) -> bool:
        """Wait until the record numbered ``seq`` has been read (False on timeout, violation or end of channel)."""
        with self._changed:
            self._changed.wait_for(lambda: (self._records and self._records[-1].seq >= seq)
                                   or self._parser.tampered is not None or self._ended, timeout_s)
            return bool(self._records) and self._records[-1].seq >= seq

    def wait_for_flush(self, count: int, timeout_s: float) -> bool:
        """Wait until ``count`` FLUSH records have arrived (the harness flushes after each phase)."""
        def done() -> bool:
            return self._flushes >= count

        with self._changed:
            self._changed.wait_for(lambda: done() or self._parser.tampered is not None or self._ended, timeout_s)
            return done()

    def wait_ended(self, timeout_s: float) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self._ended, timeout_s)

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        try:
            os.close(self._fd)
        except OSError:
            pass


@dataclass
class TraceChannel:
    """The pipes and key for one traced child. Use: ``open`` -> spawn the child with ``child_env()`` and
    ``pass_fds=child_fds()`` -> ``start_reading()`` (which closes the parent's copies of the child's ends)."""

    key: bytes
    shim: Path
    cupti_library: Path | None
    expected_exe: str | None
    record_read: int
    record_write: int
    key_read: int

    @classmethod
    def open(cls, shim: Path, cupti_library: Path | None = None, expected_exe: str | None = None) -> TraceChannel:
        """``expected_exe``: the program that must claim the channel (e.g. ``sys.executable``), so that a launcher
        exec'd first (a sandbox helper) leaves it to the program it starts."""
        shim = Path(shim).resolve()
        if any(c in str(shim) for c in ": \t\n"):  # LD_PRELOAD separates entries with colons and blanks
            raise ValueError(f"the trace shim's path {str(shim)!r} cannot go in LD_PRELOAD: build it in a folder "
                             "whose path has no colon or blank")
        key = secrets.token_bytes(KEY_BYTES)
        record_read, record_write = os.pipe()
        key_read, key_write = os.pipe()
        try:
            os.write(key_write, key)  # 16 bytes always fit in an empty pipe
        finally:
            os.close(key_write)
        return cls(key, shim, cupti_library, expected_exe, record_read, record_write, key_read)

    def child_env(self) -> dict[str, str]:
        env = {"LD_PRELOAD": str(self.shim), "KERNELEVO_TRACE_FD": str(self.record_write),
               "KERNELEVO_TRACE_KEY_FD": str(self.key_read)}
        if self.cupti_library is not None:
            env["KERNELEVO_CUPTI_LIB"] = str(self.cupti_library)
        if self.expected_exe:
            env["KERNELEVO_TRACE_EXE"] = self.expected_exe
        return env

    def child_fds(self) -> tuple[int, int]:
        return (self.record_write, self.key_read)

    def start_reading(self, limit_bytes: int = DEFAULT_LIMIT_BYTES) -> TraceReader:
        for fd in self.child_fds():
            try:
                os.close(fd)
            except OSError:
                pass
        return TraceReader(self.record_read, self.key, limit_bytes).start()

    def abandon(self) -> None:
        """Close every descriptor (the child could not be started)."""
        for fd in (self.record_read, *self.child_fds()):
            try:
                os.close(fd)
            except OSError:
                pass
