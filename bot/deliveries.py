"""Webhook deliveries handled at least once, never twice at the same time, and replays refused.

A delivery id is claimed in Redis on arrival with a short lease, which this process renews while the
delivery's handlers run; only when every handler has finished is the id marked done (kept 3 days, as
long as GitHub can redeliver). So GitHub's redelivery of a delivery whose process died mid-handling is
handled once the dead process's lease lapses, a delivery being handled is not handled a second time
concurrently (by this replica or another), and a handled one is a replay.
"""

from __future__ import annotations

import logging
import threading
import uuid
from dataclasses import dataclass

import redis

from bot.state import BotState, DeliveryClaim

log = logging.getLogger(__name__)

DEFAULT_TTL_S = 3 * 24 * 3600  # GitHub can redeliver (same id) for about three days
LEASE_S = 30.0  # a dead handler's delivery can be redelivered this long after it died


@dataclass
class _Held:
    left: int = 0  # handlers still running
    lost: bool = False  # one failed on Redis: give the delivery up instead of marking it done


class Deliveries:
    """Claims, leases and completion of this process's deliveries (see the module docstring)."""

    def __init__(self, state: BotState, *, owner: str | None = None, lease_s: float = LEASE_S,
                 ttl_s: int = DEFAULT_TTL_S) -> None:
        self.state, self.lease_s, self.ttl_s = state, lease_s, ttl_s
        self.owner = owner or uuid.uuid4().hex
        self._held: dict[str, _Held] = {}
        self._lock = threading.Lock()
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None

    def claim(self, delivery_id: str) -> DeliveryClaim:
        """NEW: handle it (this process holds its lease now); HANDLING or DONE: do not. Raises
        ``redis.RedisError`` when Redis is down (the webhook answers 503, GitHub may retry)."""
        claim = self.state.claim_delivery(delivery_id, self.owner, self.lease_s)
        if claim is DeliveryClaim.NEW:
            with self._lock:
                self._held[delivery_id] = _Held()
            self._ensure_renewer()
        return claim

    def hold(self, delivery_id: str, handlers: int) -> None:
        """``handlers`` work items will report back with :meth:`handler_done`; none: done now."""
        with self._lock:
            self._held.setdefault(delivery_id, _Held()).left = handlers
        if handlers == 0:
            self._finish(delivery_id)

    def handler_done(self, delivery_id: str, error: BaseException | None = None) -> None:
        """One handler finished (``error``: it failed). The delivery is done when the last one is; a
        Redis failure gives it up instead, so that a redelivery is handled."""
        with self._lock:
            held = self._held.setdefault(delivery_id, _Held(left=1))
            held.left -= 1
            held.lost |= isinstance(error, redis.RedisError)
            left, lost = held.left, held.lost
        if left > 0:
            return
        if lost:
            self.release(delivery_id)
        else:
            self._finish(delivery_id)

    def done_now(self, delivery_id: str) -> None:
        """A delivery with nothing to run (ping, an ignored event, a refused one)."""
        self.hold(delivery_id, 0)

    def release(self, delivery_id: str) -> None:
        with self._lock:
            self._held.pop(delivery_id, None)
        try:
            self.state.release_delivery(delivery_id, self.owner)
        except redis.RedisError as exc:  # the lease lapses by itself
            log.warning("could not release delivery %s: %s", delivery_id, exc)

    def pending(self) -> int:
        with self._lock:
            return len(self._held)

    def stop(self) -> None:
        self._halt.set()

    def _finish(self, delivery_id: str) -> None:
        with self._lock:
            self._held.pop(delivery_id, None)
        try:
            self.state.finish_delivery(delivery_id, self.ttl_s)
        except redis.RedisError as exc:  # the lease lapses: a redelivery would run it again
            log.warning("could not mark delivery %s handled: %s", delivery_id, exc)

    def _ensure_renewer(self) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(target=self._renew, name="kernelevo-deliveries", daemon=True)
            self._thread.start()

    def _renew(self) -> None:
        """Renew the held leases every third of a lease; end once none is held (the next claim starts a renewer
        again), so that an idle process neither talks to Redis nor keeps a thread."""
        while not self._halt.wait(self.lease_s / 3):
            with self._lock:
                held = list(self._held)
                if not held:
                    self._thread = None
                    return
            try:
                self.state.renew_deliveries(held, self.owner, self.lease_s)
            except redis.RedisError as exc:
                log.warning("could not renew delivery leases: %s", exc)
