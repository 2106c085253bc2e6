"""Events and routers (gidgethub style): each feature module owns a :class:`Router`.

A handler is ``handler(event, gh, ctx)``: the event, the installation's GitHub client and the
:class:`bot.context.BotContext` (job queue, clock, stores). Routers only *select* handlers; the web
app puts each selected call on the work queue, so no handler ever runs inside the HTTP request.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class WebhookOutcome(str, enum.Enum):
    """What ``POST /webhook`` did with a delivery: the endpoint's answer as a value (its HTTP status is
    :attr:`status`), and the ``outcome`` label of the webhook metrics."""

    QUEUED = "queued"  # handlers put on the work queue
    IGNORED = "ignored"  # no handler for this event/action
    PONG = "pong"  # GitHub's ping
    DUPLICATE = "duplicate"  # a redelivery of a delivery already handled
    IN_PROGRESS = "in_progress"  # a copy of a delivery being handled right now
    BAD_SIGNATURE = "bad_signature"  # missing or wrong X-Hub-Signature-256
    NO_INSTALLATION = "no_installation"  # a routed event without an App installation
    MALFORMED = "malformed"  # headers missing, body not a JSON object, payload not of the event's shape
    TOO_LARGE = "too_large"  # a body over GitHub's payload limit
    REDIS_UNAVAILABLE = "redis_unavailable"  # nothing could be recorded
    ERROR = "error"  # the endpoint raised

    @property
    def status(self) -> int:
        """The HTTP status the endpoint answers with (GitHub shows non-2xx deliveries as failed)."""
        return _OUTCOME_STATUS[self]


_OUTCOME_STATUS = {
    WebhookOutcome.QUEUED: 202, WebhookOutcome.IGNORED: 200, WebhookOutcome.PONG: 200, WebhookOutcome.DUPLICATE: 200,
    WebhookOutcome.IN_PROGRESS: 409, WebhookOutcome.BAD_SIGNATURE: 401, WebhookOutcome.NO_INSTALLATION: 400,
    WebhookOutcome.MALFORMED: 400, WebhookOutcome.TOO_LARGE: 413, WebhookOutcome.REDIS_UNAVAILABLE: 503,
    WebhookOutcome.ERROR: 500,
}


@dataclass(frozen=True)
class Event:
    """One webhook delivery: ``X-GitHub-Event`` name, ``X-GitHub-Delivery`` id and the payload."""

    name: str
    delivery_id: str
    payload: dict[str, Any]

    @property
    def action(self) -> str | None:
        return self.payload.get("action")

    @property
    def installation_id(self) -> int | None:
        return (self.payload.get("installation") or {}).get("id")

    def require_installation_id(self) -> int:
        """The App installation the event is for; handlers may rely on it (the web app answers 400, running no
        handler, for an event without one)."""
        installation_id = self.installation_id
        if installation_id is None:
            raise ValueError(f"{self.name} delivery {self.delivery_id} has no installation: only events of an"
                             " installed GitHub App reach the handlers")
        return installation_id

    @property
    def repo(self) -> str:
        return str((self.payload.get("repository") or {}).get("full_name", ""))


Handler = Callable[[Event, Any, Any], None]


class Router:
    """Maps (event name, action) to handlers; ``Router(a, b)`` merges sub-routers."""

    def __init__(self, *others: Router) -> None:
        self._routes: dict[tuple[str, str | None], list[Handler]] = {}
        for other in others:
            for key, handlers in other._routes.items():
                self._routes.setdefault(key, []).extend(handlers)

    def register(self, event: str, action: str | None = None) -> Callable[[Handler], Handler]:
        """Decorator: call the handler for ``event`` (only for ``action`` when given)."""

        def decorate(handler: Handler) -> Handler:
            self._routes.setdefault((event, action), []).append(handler)
            return handler

        return decorate

    def events(self) -> frozenset[str]:
        """Event names this router has handlers for (the only event labels bot.metrics exports)."""
        return frozenset(name for name, _ in self._routes)

    def handlers_for(self, event: Event) -> list[Handler]:
        """Handlers for this event: those for any action, then those for its action."""
        found = list(self._routes.get((event.name, None), []))
        if event.action is not None:
            found += self._routes.get((event.name, event.action), [])
        return found
