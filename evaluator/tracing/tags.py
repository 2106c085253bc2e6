"""MARK tags: which harness window a MARK opens or closes ("forward call k begins", "timed trial k ends").

A tag is a u64: ``kind << 56 | edge << 48 | index``. The harness writes them (through the client) around every
call it makes, in this order and no other:

* forward call k: synchronise the device, ``mark(FORWARD, BEGIN, k)``, call, synchronise, ``mark(FORWARD, END, k)``;
* timed trial k: queue the L2 flush, the busy-wait and the start event, ``mark(TRIAL, BEGIN, k)``, call, record the
  end event, synchronise, ``mark(TRIAL, END, k)``.

Kernels are placed in a window by their launch (queued) time, so the harness's own work queued before a BEGIN
falls outside it even when it runs inside.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

INDEX_BITS = 48
_INDEX_MASK = (1 << INDEX_BITS) - 1


class WindowKind(enum.IntEnum):
    FORWARD = 1
    TRIAL = 2


class Edge(enum.IntEnum):
    BEGIN = 1
    END = 2


@dataclass(frozen=True)
class Tag:
    kind: WindowKind
    edge: Edge
    index: int


def mark_tag(kind: WindowKind, edge: Edge, index: int) -> int:
    if not 0 <= index <= _INDEX_MASK:
        raise ValueError(f"window index {index} does not fit in {INDEX_BITS} bits")
    return (int(kind) << 56) | (int(edge) << 48) | index


def parse_tag(tag: int) -> Tag | None:
    """The window a tag names, or None for a value the harness never writes."""
    try:
        return Tag(WindowKind(tag >> 56), Edge((tag >> 48) & 0xFF), tag & _INDEX_MASK)
    except ValueError:
        return None
