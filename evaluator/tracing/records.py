"""Typed trace records decoded from authenticated frames (the payload layouts of ``shim.c``, mirrored here).

Every payload has a fixed layout (little-endian, no padding) with at most one trailing string whose length is
stated in the payload; a payload that does not match its type's layout exactly is refused as
``TamperKind.BAD_PAYLOAD``. ``encode_record`` writes the same frames the shim writes, so tests and the probe can
build synthetic traces in the real format with a real MAC.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterable
from dataclasses import dataclass

from evaluator.tracing.frames import FrameParser, RawFrame, TamperKind, TraceTampered, encode_frame

PROTOCOL = 1
UNKNOWN_TIMESTAMP = 0  # CUPTI_TIMESTAMP_UNKNOWN


class RecordType(enum.IntEnum):
    START = 1
    ERROR = 2
    KERNEL = 3
    MEMCPY = 4
    MEMSET = 5
    MARK = 6
    DROPPED = 7
    FLUSH = 8


class ErrorStage(enum.IntEnum):
    """Where the shim's set-up or operation failed (the ``S_*`` values of ``shim.c``)."""

    CHANNEL = 1
    DRIVER = 2
    DLOPEN = 3
    SYMBOL = 4
    VERSION = 5
    CALLBACKS = 6
    ENABLE = 7
    LATENCY = 8
    FLUSH = 9
    STREAM = 10


class StartFlag(enum.IntFlag):
    CUPTI_LOADED = 1
    ACTIVE = 2  # CUPTI records kernels, copies and memsets
    LATENCY = 4  # kernel records carry their launch (queued) time
    PEER_COPIES = 8
    FD_MOVED = 16


class MarkFlag(enum.IntFlag):
    FALLBACK_CLOCK = 1  # CLOCK_MONOTONIC, not CUPTI's clock: not comparable with activity timestamps
    STREAM_UNKNOWN = 2
    STREAM_WITH_CONTEXT = 4  # resolved with the current context
    STREAM_LEGACY_HANDLE = 8  # handle 0 resolved as CU_STREAM_LEGACY


class KernelFlag(enum.IntFlag):
    NAME_TRUNCATED = 1
    ACCESS_POLICY = 2  # the launch carried an access-policy (persisting L2) window
    DEVICE_LAUNCHED = 4
    NO_NAME = 8


@dataclass(frozen=True, slots=True)
class StartRecord:
    seq: int
    protocol: int
    flags: StartFlag
    cupti_compiled: int
    cupti_runtime: int
    pid: int


@dataclass(frozen=True, slots=True)
class ErrorRecord:
    seq: int
    stage: ErrorStage
    code: int
    text: str


@dataclass(frozen=True, slots=True)
class KernelRecord:
    seq: int
    start: int
    end: int
    queued: int  # host time of the launch (0: unknown)
    device: int
    context: int
    stream: int
    correlation: int
    graph: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared: int
    static_shared: int
    registers: int
    flags: KernelFlag
    cupti_kind: int
    name: str


@dataclass(frozen=True, slots=True)
class MemcpyRecord:
    seq: int
    start: int
    end: int
    bytes: int
    device: int
    context: int
    stream: int
    correlation: int
    graph: int
    copy_kind: int  # CUpti_ActivityMemcpyKind: 1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP ...
    src_kind: int
    dst_kind: int
    cupti_flags: int
    peer: bool
    src_device: int
    dst_device: int


@dataclass(frozen=True, slots=True)
class MemsetRecord:
    seq: int
    start: int
    end: int
    bytes: int
    device: int
    context: int
    stream: int
    correlation: int
    graph: int
    value: int
    memory_kind: int
    cupti_flags: int


@dataclass(frozen=True, slots=True)
class MarkRecord:
    seq: int
    tag: int
    timestamp: int
    stream_handle: int
    stream_id: int
    flags: MarkFlag


@dataclass(frozen=True, slots=True)
class DroppedRecord:
    seq: int
    count: int
    context: int
    stream: int


@dataclass(frozen=True, slots=True)
class FlushRecord:
    seq: int
    timestamp: int
    result: int
    flags: MarkFlag


Record = (StartRecord | ErrorRecord | KernelRecord | MemcpyRecord | MemsetRecord | MarkRecord | DroppedRecord
          | FlushRecord)
Activity = KernelRecord | MemcpyRecord | MemsetRecord

_START = struct.Struct("<HHIII")
_ERROR = struct.Struct("<HiH")
_KERNEL = struct.Struct("<QQQIIIII8iHBBH")
_MEMCPY = struct.Struct("<QQQIIIIIBBBBBII")
_MEMSET = struct.Struct("<QQQIIIIIIHH")
_MARK = struct.Struct("<QQQIB")
_DROPPED = struct.Struct("<QII")
_FLUSH = struct.Struct("<QiB")


class PayloadError(ValueError):
    pass


def _text(raw: bytes) -> str:
    """Printable ASCII only, the rest escaped: names and messages end up in verdicts, logs and Markdown."""
    return "".join(chr(b) if 0x20 <= b < 0x7F and b != 0x5C else f"\\x{b:02x}" for b in raw)


def _exact(layout: struct.Struct, payload: bytes, name: str) -> tuple:
    if len(payload) != layout.size:
        raise PayloadError(f"{name} payload of {len(payload)} bytes, expected {layout.size}")
    return layout.unpack(payload)


def _tail(layout: struct.Struct, payload: bytes, name: str, length_index: int, limit: int) -> tuple[tuple, bytes]:
    if len(payload) < layout.size:
        raise PayloadError(f"{name} payload of {len(payload)} bytes, shorter than its {layout.size}-byte header")
    fields = layout.unpack_from(payload, 0)
    length = fields[length_index]
    if length > limit or len(payload) != layout.size + length:
        raise PayloadError(f"{name} states a {length}-byte string in a {len(payload)}-byte payload")
    return fields, payload[layout.size:]


def decode(frame: RawFrame) -> Record:
    """The typed record of one authenticated frame (:class:`PayloadError` when it does not decode)."""
    p, seq = frame.payload, frame.seq
    try:
        kind = RecordType(frame.type)
    except ValueError as exc:
        raise PayloadError(f"unknown record type {frame.type}") from exc
    if kind is RecordType.START:
        protocol, flags, compiled, runtime, pid = _exact(_START, p, "START")
        return StartRecord(seq, protocol, StartFlag(flags), compiled, runtime, pid)
    if kind is RecordType.ERROR:
        (stage, code, _), text = _tail(_ERROR, p, "ERROR", 2, 1024)
        try:
            stage_value = ErrorStage(stage)
        except ValueError as exc:
            raise PayloadError(f"unknown error stage {stage}") from exc
        return ErrorRecord(seq, stage_value, code, _text(text))
    if kind is RecordType.KERNEL:
        fields, name = _tail(_KERNEL, p, "KERNEL", 19, 1024)
        start, end, queued, device, context, stream, corr, graph = fields[:8]
        grid, block = tuple(fields[8:11]), tuple(fields[11:14])
        dyn, static, regs, flags, cupti_kind, _ = fields[14:]
        return KernelRecord(seq, start, end, queued, device, context, stream, corr, graph, grid, block,
                            dyn, static, regs, KernelFlag(flags), cupti_kind, _text(name))
    if kind is RecordType.MEMCPY:
        (start, end, nbytes, device, context, stream, corr, graph, copy_kind, src_kind, dst_kind, cflags, peer,
         src_dev, dst_dev) = _exact(_MEMCPY, p, "MEMCPY")
        return MemcpyRecord(seq, start, end, nbytes, device, context, stream, corr, graph, copy_kind, src_kind,
                            dst_kind, cflags, bool(peer), src_dev, dst_dev)
    if kind is RecordType.MEMSET:
        start, end, nbytes, device, context, stream, corr, graph, value, mem_kind, cflags = _exact(_MEMSET, p, "MEMSET")
        return MemsetRecord(seq, start, end, nbytes, device, context, stream, corr, graph, value, mem_kind, cflags)
    if kind is RecordType.MARK:
        tag, ts, handle, stream_id, flags = _exact(_MARK, p, "MARK")
        return MarkRecord(seq, tag, ts, handle, stream_id, MarkFlag(flags))
    if kind is RecordType.DROPPED:
        count, context, stream = _exact(_DROPPED, p, "DROPPED")
        return DroppedRecord(seq, count, context, stream)
    ts, result, flags = _exact(_FLUSH, p, "FLUSH")
    return FlushRecord(seq, ts, result, MarkFlag(flags))


def _payload(record: Record) -> tuple[RecordType, bytes]:
    r = record
    if isinstance(r, StartRecord):
        return RecordType.START, _START.pack(r.protocol, int(r.flags), r.cupti_compiled, r.cupti_runtime, r.pid)
    if isinstance(r, ErrorRecord):
        text = r.text.encode()
        return RecordType.ERROR, _ERROR.pack(int(r.stage), r.code, len(text)) + text
    if isinstance(r, KernelRecord):
        name = r.name.encode()
        return RecordType.KERNEL, _KERNEL.pack(r.start, r.end, r.queued, r.device, r.context, r.stream,
                                               r.correlation, r.graph, *r.grid, *r.block, r.dynamic_shared,
                                               r.static_shared, r.registers, int(r.flags), r.cupti_kind,
                                               len(name)) + name
    if isinstance(r, MemcpyRecord):
        return RecordType.MEMCPY, _MEMCPY.pack(r.start, r.end, r.bytes, r.device, r.context, r.stream, r.correlation,
                                               r.graph, r.copy_kind, r.src_kind, r.dst_kind, r.cupti_flags,
                                               int(r.peer), r.src_device, r.dst_device)
    if isinstance(r, MemsetRecord):
        return RecordType.MEMSET, _MEMSET.pack(r.start, r.end, r.bytes, r.device, r.context, r.stream, r.correlation,
                                               r.graph, r.value, r.memory_kind, r.cupti_flags)
    if isinstance(r, MarkRecord):
        return RecordType.MARK, _MARK.pack(r.tag, r.timestamp, r.stream_handle, r.stream_id, int(r.flags))
    if isinstance(r, DroppedRecord):
        return RecordType.DROPPED, _DROPPED.pack(r.count, r.context, r.stream)
    return RecordType.FLUSH, _FLUSH.pack(r.timestamp, r.result, int(r.flags))


def encode_record(key: bytes, record: Record) -> bytes:
    """The frame the shim would write for ``record`` (its ``seq`` included)."""
    kind, payload = _payload(record)
    return encode_frame(key, record.seq, int(kind), payload)


def encode_trace(key: bytes, records: Iterable[Record]) -> bytes:
    return b"".join(encode_record(key, r) for r in records)


class RecordParser:
    """Bytes in, typed records out; the first violation becomes ``tampered`` and ends parsing."""

    def __init__(self, key: bytes):
        self._frames = FrameParser(key)

    @property
    def tampered(self) -> TraceTampered | None:
        return self._frames.tampered

    def feed(self, data: bytes) -> list[Record]:
        out: list[Record] = []
        for frame in self._frames.feed(data):
            try:
                out.append(decode(frame))
            except PayloadError as exc:
                self._frames.tampered = TraceTampered(TamperKind.BAD_PAYLOAD, frame.offset, frame.seq, str(exc))
                break
        return out

    def finish(self) -> TraceTampered | None:
        return self._frames.finish()

    def refuse_more(self, limit: int) -> None:
        self._frames.refuse_more(limit)


@dataclass(frozen=True)
class ParsedTrace:
    records: tuple[Record, ...]
    tampered: TraceTampered | None


def parse_trace(key: bytes, data: bytes, complete: bool = True) -> ParsedTrace:
    """Parse a whole channel's bytes (``complete``: the channel has ended, so a partial frame is a truncation)."""
    parser = RecordParser(key)
    records = parser.feed(data)
    tampered = parser.finish() if complete else parser.tampered
    return ParsedTrace(tuple(records), tampered)
