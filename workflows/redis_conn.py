"""Connecting to Redis: clients from the configured URL, retries through outages, URLs safe to log."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

import redis
import tenacity

log = logging.getLogger(__name__)

T = TypeVar("T")

# What a restart or a network blip looks like (BusyLoadingError, Redis loading its AOF, is a ConnectionError).
TRANSIENT = (redis.ConnectionError, redis.TimeoutError)


class QueueUnavailable(RuntimeError):
    """Redis cannot be reached; the message names the (redacted) URL and what to do."""


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``***`` (the Redis URL may hold one; never log it)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable URL>"
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{user}:***@{host}" if user else f":***@{host}"
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def unavailable(url: str, exc: BaseException) -> QueueUnavailable:
    return QueueUnavailable(
        f"cannot reach Redis at {redact_url(url)} ({type(exc).__name__}: {exc}). Start redis-server (see"
        " deploy/redis.conf) or point KERNELEVO_REDIS_URL at a running one."
    )


def connect(url: str, *, timeout_s: float = 5.0, check: bool = True) -> redis.Redis:
    """A client for ``url``; with ``check`` it pings first and raises :class:`QueueUnavailable` at once.
    ``timeout_s`` bounds connecting and every reply (no command here blocks on the server)."""
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s,
                                      health_check_interval=30)
        if check:
            client.ping()
    except (redis.RedisError, ValueError) as exc:
        raise unavailable(url, exc) from None
    return client


def _log_retry(state: tenacity.RetryCallState) -> None:
    """Log the transient error before the next attempt (tenacity has recorded the failed attempt's outcome)."""
    error = state.outcome.exception() if state.outcome is not None else None
    log.warning("Redis unavailable (%s); retrying", error)


def retrying(within_s: float) -> Callable[[Callable[[], T]], T]:
    """Run a callable, retrying transient Redis errors with backoff for up to ``within_s`` seconds.

    Why a library: tenacity's stop/wait policies are tested; a hand-rolled loop would not be."""
    if within_s <= 0:
        return lambda fn: fn()
    policy = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(TRANSIENT),
        wait=tenacity.wait_exponential(multiplier=0.1, max=5.0) + tenacity.wait_random(0, 0.2),
        stop=tenacity.stop_after_delay(within_s),
        before_sleep=_log_retry,
        reraise=True,
    )
    return lambda fn: policy(fn)
