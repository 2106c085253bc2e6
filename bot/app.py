"""The webhook service: ``POST /webhook`` and ``GET /healthz`` (Starlette).

The request handler only verifies the signature, drops replayed deliveries, selects handlers and
puts them on the work queue; it answers in milliseconds and never calls GitHub itself.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from bot import signature
from bot.deliveries import DeliveryStore
from bot.routing import Event, Handler, Router
from bot.workqueue import WorkQueue

log = logging.getLogger(__name__)


def default_router() -> Router:
    """Every feature router of the App, composed."""
    from bot import on_check_run, on_comment, on_installation, on_pull_request

    return Router(on_comment.router, on_pull_request.router, on_check_run.router, on_installation.router)


def create_app(*, secret: str, deliveries: DeliveryStore, work: WorkQueue, ctx: Any,
               router: Router | None = None) -> Starlette:
    """The ASGI app; ``ctx`` is the :class:`bot.context.BotContext` handlers receive."""
    if not secret:
        raise ValueError("refusing to serve webhooks without a webhook secret (KERNELEVO_WEBHOOK_SECRET)")
    router = router or default_router()

    def run(handler: Handler, event: Event) -> None:
        if event.repo and event.installation_id is not None:
            ctx.installations[event.repo] = event.installation_id
        handler(event, ctx.github(event.installation_id), ctx)

    async def webhook(request: Request) -> JSONResponse:
        body = await request.body()
        if not signature.verify(secret, body, request.headers.get("x-hub-signature-256")):
            return JSONResponse({"error": "missing or invalid X-Hub-Signature-256"}, status_code=401)
        name = request.headers.get("x-github-event")
        delivery = request.headers.get("x-github-delivery")
        if not name or not delivery:
            return JSONResponse({"error": "missing X-GitHub-Event or X-GitHub-Delivery"}, status_code=400)
        try:
            payload = json.loads(body)
        except ValueError:
            return JSONResponse({"error": "body is not JSON"}, status_code=400)
        if not isinstance(payload, dict):
            return JSONResponse({"error": "body is not a JSON object"}, status_code=400)
        if not deliveries.first_time(delivery):
            return JSONResponse({"status": "duplicate delivery ignored", "delivery": delivery})
        if name == "ping":
            return JSONResponse({"status": "pong"})
        event = Event(name, delivery, payload)
        handlers = router.handlers_for(event)
        if handlers and event.installation_id is None:
            return JSONResponse({"error": "event has no installation: install KernelEvo as a GitHub App"},
                                status_code=400)
        for handler in handlers:
            work.submit(lambda h=handler: run(h, event), name=f"{name}.{event.action} {delivery}")
        return JSONResponse({"status": "queued" if handlers else "ignored", "handlers": len(handlers)},
                            status_code=202 if handlers else 200)

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "pending": work.pending()})

    return Starlette(routes=[Route("/webhook", webhook, methods=["POST"]),
                             Route("/healthz", healthz, methods=["GET"])])
