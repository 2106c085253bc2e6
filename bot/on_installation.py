"""Installation events: keep the repo -> installation map in Redis; drop what a removed install had."""

from __future__ import annotations

import logging
from typing import Any

from bot import context
from bot.routing import Event, Router
from bot.state import REPO_RE

log = logging.getLogger(__name__)
router = Router()


def _names(repos: list[dict[str, Any]] | None) -> list[str]:
    return [r["full_name"] for r in repos or [] if REPO_RE.match(str(r.get("full_name", "")))]


@router.register("installation")
@router.register("installation_repositories")
def on_installation(event: Event, gh: object, ctx: context.BotContext) -> None:
    """Record which repositories the installation covers (sweeps iterate them); on ``deleted``/``suspend``
    forget its repositories and its cached token."""
    payload, installation_id = event.payload, event.require_installation_id()
    account = ((payload.get("installation") or {}).get("account") or {}).get("login", "?")
    log.info("installation %s %s for %s", installation_id, event.action, account)
    if event.action in ("deleted", "suspend"):
        ctx.state.forget_installation(installation_id)
        if ctx.forget_installation:
            ctx.forget_installation(installation_id)
        return
    for repo in _names(payload.get("repositories")) + _names(payload.get("repositories_added")):
        ctx.state.set_installation(repo, installation_id)
    ctx.state.forget_repos(_names(payload.get("repositories_removed")))
