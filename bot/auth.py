"""GitHub App authentication: an App JWT (RS256) exchanged for installation tokens, cached.

Each token is requested for one repository and the permissions of one kind of step (least privilege):
:data:`READ` to download a checkout, :data:`WRITE` for the bot's REST calls on that repository. Tokens are
cached per (installation, repository, permissions) and refreshed ``refresh_margin_s`` before they expire,
so a token leaked from one step can write to no other repository of the installation.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import jwt

# issues: read only: comments and reactions on PRs need pull_requests: write; issues: read is what lets the App
# subscribe to issue_comment (asking a token for more than the installation grants is refused by GitHub)
WRITE = {"contents": "write", "pull_requests": "write", "issues": "read", "checks": "write", "metadata": "read"}
READ = {"contents": "read", "metadata": "read"}  # a tarball of a commit
PERMISSIONS = WRITE  # everything the App's manifest (deploy/github-app-manifest.json) asks for


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

    def __init__(self, app_id: int, private_key: str, post: Callable[[str, str, dict[str, Any]], dict[str, Any]], *,
                 clock: Callable[[], float] = time.time, refresh_margin_s: float = 300.0) -> None:
        self._app_id, self._key, self._post = app_id, private_key, post
        self._clock, self._margin = clock, refresh_margin_s
        self._cache: dict[tuple[int, str, tuple[tuple[str, str], ...]], tuple[str, float]] = {}
        self._lock = threading.Lock()

    def get(self, installation_id: int, repo: str, permissions: Mapping[str, str] = WRITE) -> str:
        """A token for one repository (``owner/name``) of the installation with ``permissions``, fetched only
        when missing or about to expire."""
        owner, slash, name = repo.partition("/")
        if not slash or not owner or not name or "/" in name:
            raise ValueError(f"{repo!r} is not owner/name: tokens are requested per repository")
        key = (installation_id, repo, tuple(sorted(permissions.items())))
        with self._lock:
            cached = self._cache.get(key)
            now = self._clock()
            if cached and cached[1] - self._margin > now:
                return cached[0]
            data: dict[str, Any] = self._post(f"/app/installations/{installation_id}/access_tokens",
                                              app_jwt(self._app_id, self._key, now),
                                              {"repositories": [name], "permissions": dict(permissions)})
            token, expires = str(data["token"]), parse_expiry(data["expires_at"])
            self._cache[key] = (token, expires)
            return token

    def forget(self, installation_id: int) -> None:
        """Drop the installation's cached tokens (it was removed or a token was refused)."""
        with self._lock:
            for key in [k for k in self._cache if k[0] == installation_id]:
                del self._cache[key]
