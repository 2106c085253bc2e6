"""GitHub App authentication: an App JWT (RS256) exchanged for installation tokens, cached.

Tokens are cached per installation and refreshed ``refresh_margin_s`` before they expire; each
token asks only for the permissions the bot needs (least privilege, DESIGN.md section 8).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import jwt

PERMISSIONS = {"contents": "write", "pull_requests": "write", "issues": "write", "checks": "write",
               "metadata": "read"}


def app_jwt(app_id: int, private_key: str, now: float) -> str:
    """A JWT that identifies the App for 9 minutes (issued 60 s in the past against clock skew)."""
    payload = {"iat": int(now) - 60, "exp": int(now) + 540, "iss": str(app_id)}
    return jwt.encode(payload, private_key, algorithm="RS256")


def parse_expiry(value: str) -> float:
    """``expires_at`` (ISO 8601, ``Z``) as a UNIX timestamp."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


class InstallationTokens:
    """Installation tokens on demand: ``get(installation_id)`` returns a valid token.

    ``post`` performs the exchange: ``post(path, jwt, body) -> response dict``; the bot passes a
    function built on the PyGithub requester (see :mod:`bot.github_api`).
    """

    def __init__(self, app_id: int, private_key: str, post: Callable[[str, str, dict], dict], *,
                 clock: Callable[[], float] = time.time, refresh_margin_s: float = 300.0) -> None:
        self._app_id, self._key, self._post = app_id, private_key, post
        self._clock, self._margin = clock, refresh_margin_s
        self._cache: dict[int, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def get(self, installation_id: int) -> str:
        """A token for the installation, fetched only when missing or about to expire."""
        with self._lock:
            cached = self._cache.get(installation_id)
            now = self._clock()
            if cached and cached[1] - self._margin > now:
                return cached[0]
            data: dict[str, Any] = self._post(f"/app/installations/{installation_id}/access_tokens",
                                              app_jwt(self._app_id, self._key, now),
                                              {"permissions": PERMISSIONS})
            token, expires = data["token"], parse_expiry(data["expires_at"])
            self._cache[installation_id] = (token, expires)
            return token

    def forget(self, installation_id: int) -> None:
        """Drop a cached token (the installation was removed or the token was refused)."""
        with self._lock:
            self._cache.pop(installation_id, None)
