"""Installation events: log who installed or removed the App; drop tokens of removed installs."""

from __future__ import annotations

import logging

from bot import context
from bot.routing import Event, Router

log = logging.getLogger(__name__)
router = Router()


@router.register("installation")
@router.register("installation_repositories")
def on_installation(event: Event, gh: object, ctx: context.BotContext) -> None:
    """Record the change; on ``deleted``/``suspend`` forget the installation's cached token."""
    account = ((event.payload.get("installation") or {}).get("account") or {}).get("login", "?")
    log.info("installation %s %s for %s", event.installation_id, event.action, account)
    if event.action in ("deleted", "suspend") and ctx.forget_installation:
        ctx.forget_installation(event.installation_id)
