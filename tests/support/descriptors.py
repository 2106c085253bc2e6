"""Which descriptors of this process refer to given kernel objects.

A leak check that counts the whole descriptor table fails whenever another thread of the test process (left by an
earlier test, or torch's own) opens or closes a descriptor in between. These helpers name the objects instead: a
process under test writes the identity (device, inode) of everything it sends to a log, and the test asks which of
its own descriptors, opened since a snapshot, are one of them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

Identity = tuple[int, int]

# For a hostile harness: appends the identities of the descriptors it sends, one "device inode" line each.
LOG_IDENTITIES = (
    "def log_identities(path, fds):\n"
    "    import os\n"
    "    with open(path, 'a') as log:\n"
    "        for fd in fds:\n"
    "            info = os.fstat(fd)\n"
    "            log.write(f'{info.st_dev} {info.st_ino}\\n')\n"
)


def identity(fd: int) -> Identity:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def snapshot() -> dict[int, Identity]:
    """This process's descriptors and the object each refers to (one that closes while being read is left out)."""
    table = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            info = os.stat(f"/proc/self/fd/{name}")
        except OSError:
            continue
        table[int(name)] = (info.st_dev, info.st_ino)
    return table


def log_identities(path: Path, fds: Iterable[int]) -> None:
    """The test side of ``LOG_IDENTITIES``: record descriptors the parent itself holds for the process under test."""
    with open(path, "a") as log:
        for fd in fds:
            dev, ino = identity(fd)
            log.write(f"{dev} {ino}\n")


def logged(path: Path) -> set[Identity]:
    if not path.exists():
        return set()
    pairs = (line.split() for line in path.read_text().splitlines() if line.strip())
    return {(int(dev), int(ino)) for dev, ino in pairs}


def held_since(before: dict[int, Identity], objects: set[Identity]) -> list[int]:
    """Descriptors of this process that refer to one of ``objects`` and were not already open on it at ``before``.
    Objects that share one inode (eventfd, epoll and other anonymous inodes) are told apart by that snapshot."""
    return sorted(fd for fd, obj in snapshot().items() if obj in objects and before.get(fd) != obj)
