"""The trace channel's framing: ``u32 length | u64 seq | u8 type | payload | u64 mac``, checked frame by frame.

The shim (``shim.c``) writes one frame per record into a pipe that the candidate process also holds, so the
parent treats every byte as possibly forged: each frame's MAC (SipHash-2-4 over ``seq|type|payload`` under a
key only the parent and the shim know) must verify, ``seq`` must count up from 0 without a gap, and sizes are
bounded. The first violation ends the trust in everything after it: it is reported as a :class:`TraceTampered`
and the parser reads no further.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from evaluator.tracing.siphash import siphash24

KEY_BYTES = 16
HEADER = struct.Struct("<IQB")  # length, seq, type
MAC = struct.Struct("<Q")
# The shim never writes more than PIPE_BUF (4096) bytes per frame, so each write is atomic on a pipe.
MAX_FRAME = 4096
MIN_LENGTH = 8 + 1 + 8  # seq + type + mac: the length field counts the bytes after itself
MAX_LENGTH = MAX_FRAME - 4


class TamperKind(str, enum.Enum):
    BAD_LENGTH = "bad_length"  # a length field outside the bounds the shim can write
    BAD_MAC = "bad_mac"  # bytes the shim did not write (forged or corrupted)
    REPLAYED = "replayed"  # an authentic frame again, or out of order (seq lower than expected)
    MISSING = "missing"  # authentic frames were removed or reordered (seq higher than expected)
    BAD_PAYLOAD = "bad_payload"  # an authentic frame whose payload does not decode (protocol mismatch)
    TRUNCATED = "truncated"  # the channel ended inside a frame
    TOO_LARGE = "too_large"  # more trace than the parent keeps


@dataclass(frozen=True)
class TraceTampered:
    """Evidence that the trace channel carried something other than the shim's frames, in order."""

    kind: TamperKind
    offset: int  # byte offset of the offending frame in the channel
    expected_seq: int  # the seq the next authentic frame must have had
    detail: str

    @property
    def message(self) -> str:
        what = {
            TamperKind.BAD_LENGTH: "a frame of impossible length",
            TamperKind.BAD_MAC: "a frame the tracer did not write (its MAC does not verify)",
            TamperKind.REPLAYED: "an authentic frame replayed or out of order",
            TamperKind.MISSING: "a gap: authentic frames were removed or reordered",
            TamperKind.BAD_PAYLOAD: "an authentic frame that does not decode",
            TamperKind.TRUNCATED: "a frame cut off where the channel ended",
            TamperKind.TOO_LARGE: "more trace data than the verifier keeps",
        }[self.kind]
        return (f"the kernel trace carried {what} at byte {self.offset} (expected record {self.expected_seq}; "
                f"{self.detail}): something in the candidate process wrote into the verifier's trace channel or "
                "cut it short, so nothing after this point is evidence")


@dataclass(frozen=True)
class RawFrame:
    """One authenticated frame: its position in the sequence, its type byte and its payload."""

    seq: int
    type: int
    payload: bytes
    offset: int


def frame_mac(key: bytes, seq: int, type_: int, payload: bytes) -> int:
    return siphash24(key, struct.pack("<QB", seq, type_) + payload)


def encode_frame(key: bytes, seq: int, type_: int, payload: bytes) -> bytes:
    """A frame exactly as the shim writes it (used by tests and by the probe's forgery checks)."""
    body = struct.pack("<QB", seq, type_) + payload
    return struct.pack("<I", len(body) + MAC.size) + body + MAC.pack(siphash24(key, body))


class FrameParser:
    """Incremental, pure parser of the channel's bytes: feed it what arrived, get the frames that verified.

    Once a violation is found, ``tampered`` is set and later bytes are ignored (a forged frame can hide
    where the next authentic one starts, and anything after a forgery is suspect anyway).
    """

    def __init__(self, key: bytes):
        if len(key) != KEY_BYTES:
            raise ValueError(f"the trace key has {KEY_BYTES} bytes, got {len(key)}")
        self._key = key
        self._pending = bytearray()
        self._offset = 0  # channel offset of _pending[0]
        self.next_seq = 0
        self.tampered: TraceTampered | None = None

    def _fail(self, kind: TamperKind, detail: str) -> None:
        self.tampered = TraceTampered(kind, self._offset, self.next_seq, detail)
        self._pending.clear()

    def feed(self, data: bytes) -> list[RawFrame]:
        if self.tampered is not None:
            return []
        self._pending += data
        frames: list[RawFrame] = []
        while self.tampered is None and len(self._pending) >= 4:
            (length,) = struct.unpack_from("<I", self._pending, 0)
            if not MIN_LENGTH <= length <= MAX_LENGTH:
                self._fail(TamperKind.BAD_LENGTH, f"length field {length}, bounds {MIN_LENGTH}..{MAX_LENGTH}")
                break
            if len(self._pending) < 4 + length:
                break
            frame = bytes(self._pending[:4 + length])
            _, seq, type_ = HEADER.unpack_from(frame, 0)
            payload = frame[HEADER.size:-MAC.size]
            (mac,) = MAC.unpack_from(frame, len(frame) - MAC.size)
            if mac != frame_mac(self._key, seq, type_, payload):
                self._fail(TamperKind.BAD_MAC, f"frame claims seq {seq}, type {type_}")
                break
            if seq != self.next_seq:
                kind = TamperKind.REPLAYED if seq < self.next_seq else TamperKind.MISSING
                self._fail(kind, f"authentic frame with seq {seq}")
                break
            frames.append(RawFrame(seq, type_, payload, self._offset))
            del self._pending[:4 + length]
            self._offset += 4 + length
            self.next_seq += 1
        return frames

    def finish(self) -> TraceTampered | None:
        """Call at end of channel: a partial frame left over is a truncation."""
        if self.tampered is None and self._pending:
            self._fail(TamperKind.TRUNCATED, f"{len(self._pending)} bytes of an unfinished frame")
        return self.tampered

    def refuse_more(self, limit: int) -> None:
        """Stop trusting the channel because it grew past ``limit`` bytes (the reader's memory bound)."""
        if self.tampered is None:
            self._fail(TamperKind.TOO_LARGE, f"over {limit} bytes")
