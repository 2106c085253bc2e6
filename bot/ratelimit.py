"""What to do when GitHub says no: retry soon, defer the work, or fail. Pure functions.

Rules (GitHub's REST rate-limit docs): on 403/429 honour ``Retry-After``, else wait until
``X-RateLimit-Reset`` when ``X-RateLimit-Remaining`` is 0, else (secondary limit) wait a minute.
Waits longer than ``max_wait_s`` are never slept inside a request: the caller defers the whole work
item instead (:class:`Deferred`). 5xx answers are retried with exponential backoff a few times.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SECONDARY_WAIT_S = 60.0


class Deferred(Exception):  # noqa: N818 - it is a signal, not an error
    """Raised to ask the work queue to run this work item again after ``wait_s`` seconds."""

    def __init__(self, wait_s: float, reason: str) -> None:
        super().__init__(f"{reason}; deferring {wait_s:.0f}s")
        self.wait_s = wait_s
        self.reason = reason


@dataclass(frozen=True)
class Action:
    """``kind`` is "retry" (after ``wait_s``), "defer" (after ``wait_s``) or "fail"."""

    kind: str
    wait_s: float = 0.0
    reason: str = ""


def _header(headers: dict[str, Any], name: str) -> str | None:
    lowered = {k.lower(): v for k, v in (headers or {}).items()}
    return lowered.get(name.lower())


def is_rate_limited(status: int, headers: dict[str, Any], message: str = "") -> bool:
    """403/429 that is a rate limit (not a permission problem)."""
    if status == 429:
        return True
    if status != 403:
        return False
    return (_header(headers, "retry-after") is not None
            or _header(headers, "x-ratelimit-remaining") == "0"
            or "rate limit" in message.lower())


def rate_limit_wait(headers: dict[str, Any], now: float) -> float:
    """Seconds to wait according to the headers (at least 1)."""
    retry_after = _header(headers, "retry-after")
    if retry_after is not None:
        try:
            return max(1.0, float(retry_after))
        except ValueError:
            pass
    reset = _header(headers, "x-ratelimit-reset")
    if _header(headers, "x-ratelimit-remaining") == "0" and reset is not None:
        try:
            return max(1.0, float(reset) - now + 1.0)
        except ValueError:
            pass
    return SECONDARY_WAIT_S


def decide(status: int, headers: dict[str, Any], message: str, attempt: int, now: float, *,
           max_wait_s: float = 10.0, max_attempts: int = 4, backoff_s: float = 0.5) -> Action:
    """Next step after a failed call; ``attempt`` counts from 0 for the first try."""
    if is_rate_limited(status, headers, message):
        wait = rate_limit_wait(headers, now)
        if wait <= max_wait_s and attempt + 1 < max_attempts:
            return Action("retry", wait, "rate limited")
        return Action("defer", wait, f"GitHub rate limit (HTTP {status})")
    if status >= 500 or status == 0:
        if attempt + 1 < max_attempts:
            return Action("retry", min(max_wait_s, backoff_s * 2 ** attempt), f"GitHub HTTP {status}")
        return Action("fail", 0.0, f"GitHub kept answering HTTP {status} after {max_attempts} tries")
    return Action("fail", 0.0, f"GitHub HTTP {status}")
