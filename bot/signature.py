"""Webhook authenticity: GitHub's ``X-Hub-Signature-256`` (HMAC-SHA256 of the raw body)."""

from __future__ import annotations

import hashlib
import hmac

PREFIX = "sha256="


def sign(secret: str | bytes, body: bytes) -> str:
    """The header value GitHub sends for ``body`` under ``secret`` (``sha256=<hex>``)."""
    key = secret.encode() if isinstance(secret, str) else secret
    return PREFIX + hmac.new(key, body, hashlib.sha256).hexdigest()


def verify(secret: str | bytes, body: bytes, header: str | None) -> bool:
    """True only if ``header`` is the signature of ``body``; compared in constant time.

    A missing or malformed header is a failure (fail closed), never "skip validation".
    """
    if not secret or not header or not header.startswith(PREFIX):
        return False
    return hmac.compare_digest(sign(secret, body).encode(), header.strip().encode())
