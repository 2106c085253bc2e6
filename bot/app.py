"""The webhook service: ``POST /webhook`` and ``GET /healthz`` (Starlette), plus ``GET /metrics`` (``bot.metrics``)
and the status page at ``GET /`` (``bot.status_page``).

The request handler only verifies the signature, claims the delivery in Redis, selects handlers and
puts them on the work queue; it answers in milliseconds and never calls GitHub itself. The delivery is
marked handled only when its handlers have run (``bot.deliveries``). Without Redis nothing can be
recorded, so webhooks get 503 (GitHub shows the delivery as failed and it can be redelivered) and
``/healthz`` says why.
"""

from __future__ import annotations

import json
import logging
from functools import partial
from typing import TYPE_CHECKING

import redis
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from bot import metrics, payloads, signature, status_page
from bot.deliveries import Deliveries
from bot.routing import Event, Handler, Router, WebhookOutcome
from bot.state import DeliveryClaim
from bot.workqueue import WorkQueue

if TYPE_CHECKING:
    from bot.context import BotContext

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 25 * 2**20  # GitHub caps webhook payloads at 25 MB; a larger body is never a real delivery


def default_router() -> Router:
    """Every feature router of the App, composed."""
    from bot import on_check_run, on_comment, on_installation, on_pull_request

    return Router(on_comment.router, on_pull_request.router, on_check_run.router, on_installation.router)


def redis_unavailable(exc: BaseException) -> dict[str, object]:
    """The body of a 503 for a Redis outage: the webhook answers it as :attr:`WebhookOutcome.REDIS_UNAVAILABLE`,
    ``/healthz`` as a plain 503 (a health check is no delivery)."""
    return {"status": "unavailable", "error": f"Redis is unreachable ({type(exc).__name__}: {exc}): the bot cannot"
            " record deliveries or jobs; start Redis (KERNELEVO_REDIS_URL), then redeliver"}


async def read_capped(request: Request, limit: int) -> bytes | None:
    """The request body, or None as soon as it is known to exceed ``limit`` (by its Content-Length or while
    streaming): an unauthenticated sender cannot make the process hold more than ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(*, secret: str, deliveries: Deliveries, work: WorkQueue, ctx: BotContext,
               router: Router | None = None, max_body_bytes: int = MAX_BODY_BYTES,
               metrics_repo_labels: bool = False, status_access: status_page.StatusAccess | None = None) -> Starlette:
    """The ASGI app; ``ctx`` is the :class:`bot.context.BotContext` handlers receive. ``status_access``: who
    sees what on the status page (``bot.service.build`` makes it from the settings; None: nothing is listed by
    name and the operator view is off). Every webhook answer goes through :func:`bot.metrics.answer`, so the
    metrics count the outcome the endpoint chose, and its status is that outcome's."""
    if not secret:
        raise ValueError("refusing to serve webhooks without a webhook secret (KERNELEVO_WEBHOOK_SECRET)")
    router = router or default_router()

    def run(handler: Handler, event: Event) -> None:
        if event.repo and event.installation_id is not None:
            ctx.state.set_installation(event.repo, event.installation_id)
        handler(event, ctx.github(event.require_installation_id()), ctx)

    async def webhook(request: Request) -> JSONResponse:
        answer = partial(metrics.answer, request)
        body = await read_capped(request, max_body_bytes)
        if body is None:
            return answer(WebhookOutcome.TOO_LARGE,
                          {"error": f"body larger than {max_body_bytes} bytes (GitHub's payload limit)"})
        if not signature.verify(secret, body, request.headers.get("x-hub-signature-256")):
            return answer(WebhookOutcome.BAD_SIGNATURE, {"error": "missing or invalid X-Hub-Signature-256"})
        name = request.headers.get("x-github-event")
        delivery = request.headers.get("x-github-delivery")
        if not name or not delivery or len(delivery) > 200:
            return answer(WebhookOutcome.MALFORMED, {"error": "missing X-GitHub-Event or X-GitHub-Delivery"})
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError):
            return answer(WebhookOutcome.MALFORMED, {"error": "body is not JSON (or nested too deeply)"})
        if not isinstance(payload, dict):
            return answer(WebhookOutcome.MALFORMED, {"error": "body is not a JSON object"})
        try:
            problem = payloads.problem(name, payload)
        except RecursionError:
            problem = "nested too deeply"
        if problem is not None:
            return answer(WebhookOutcome.MALFORMED, {"error": f"malformed {name[:50]} payload: {problem}"})
        try:
            claim = deliveries.claim(delivery)
        except redis.RedisError as exc:
            return answer(WebhookOutcome.REDIS_UNAVAILABLE, redis_unavailable(exc))
        if claim is DeliveryClaim.DONE:
            return answer(WebhookOutcome.DUPLICATE, {"status": "duplicate delivery ignored", "delivery": delivery})
        if claim is DeliveryClaim.HANDLING:
            return answer(WebhookOutcome.IN_PROGRESS, {"status": "delivery is being handled; redeliver later if it"
                                                                 " fails", "delivery": delivery})
        if name == "ping":
            deliveries.done_now(delivery)
            return answer(WebhookOutcome.PONG, {"status": "pong"})
        event = Event(name, delivery, payload)
        handlers = router.handlers_for(event)
        if handlers and event.installation_id is None:
            deliveries.done_now(delivery)
            return answer(WebhookOutcome.NO_INSTALLATION,
                          {"error": "event has no installation: install KernelEvo as a GitHub App"})
        deliveries.hold(delivery, len(handlers))
        for handler in handlers:
            work.submit(partial(run, handler, event), name=f"{name}.{event.action} {delivery}",
                        on_done=lambda error: deliveries.handler_done(delivery, error), key=event.repo or None)
        outcome = WebhookOutcome.QUEUED if handlers else WebhookOutcome.IGNORED
        return answer(outcome, {"status": outcome.value, "handlers": len(handlers)})

    async def healthz(request: Request) -> JSONResponse:
        try:
            ctx.state.ping()
        except redis.RedisError as exc:
            return JSONResponse(redis_unavailable(exc), status_code=503)
        return JSONResponse({"status": "ok", "pending": work.pending()})

    app = Starlette(routes=[Route("/webhook", webhook, methods=["POST"]),
                            Route("/healthz", healthz, methods=["GET"])])
    # /metrics reads nothing of ctx.jobs until a scrape (bench/webhook_load.py serves without a job store)
    metrics.register(app, ctx.jobs, events=router.events(), repo_labels=metrics_repo_labels)
    status_page.register(app, ctx.jobs, status_access or status_page.StatusAccess())
    return app
