"""Replay protection: remember ``X-GitHub-Delivery`` ids for a while and refuse repeats.

One small interface, two implementations: Redis (``SET key 1 NX EX ttl``, shared by every bot
replica) for the service, and an in-memory one with an injected clock for unit tests.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

DEFAULT_TTL_S = 3 * 24 * 3600  # GitHub can redeliver (same id) for about three days


class DeliveryStore(Protocol):
    """``first_time(id)`` is True exactly once per delivery id within the TTL."""

    def first_time(self, delivery_id: str) -> bool: ...


class MemoryDeliveryStore:
    """Process-local store for tests and single-process use; expired ids are pruned lazily."""

    def __init__(self, ttl_s: float = DEFAULT_TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl, self._clock = ttl_s, clock
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def first_time(self, delivery_id: str) -> bool:
        """Record ``delivery_id``; False if it was already seen and has not expired."""
        now = self._clock()
        with self._lock:
            if len(self._seen) > 10_000:
                self._seen = {k: t for k, t in self._seen.items() if t > now}
            expires = self._seen.get(delivery_id)
            if expires is not None and expires > now:
                return False
            self._seen[delivery_id] = now + self._ttl
            return True


class RedisDeliveryStore:
    """Delivery ids as Redis keys with a TTL; atomic across replicas thanks to ``SET NX``."""

    def __init__(self, client: Any, ttl_s: int = DEFAULT_TTL_S, prefix: str = "kernelevo:delivery:") -> None:
        self._client, self._ttl, self._prefix = client, int(ttl_s), prefix

    def first_time(self, delivery_id: str) -> bool:
        """SET NX with expiry: True if the key was created now."""
        return bool(self._client.set(self._prefix + delivery_id, b"1", nx=True, ex=self._ttl))
