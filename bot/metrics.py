"""``GET /metrics`` of the web process (Prometheus text format) and the webhook latency it reports.

:func:`register` adds the route and a small ASGI middleware to the app :func:`bot.app.create_app` built.
The middleware times every ``POST /webhook`` and classifies its answer (:func:`classify`) into a
:class:`WebhookOutcome`; the Redis-backed numbers (Celery queue depths, live jobs by state) are read
when Prometheus scrapes, by :class:`RedisCollector`, so they are never stale and cost nothing between
scrapes. Everything lives in a registry of its own: no process, platform or GC collectors.

The endpoint is unauthenticated, so no label carries anything a user controls: the event label is one
of the events the App routes (or ``ping``, ``other``, ``unverified``, ``none``), outcomes and queues are
enums, and repository names appear only when the operator opts in (``repo_labels``).
"""

from __future__ import annotations

import enum
import json
import time
from collections import Counter as Tally
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING

import redis
from kombu.transport.redis import PRIORITY_STEPS
from kombu.transport.redis import Channel as KombuRedisChannel
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from workflows.models import JobRecord, JobState, QueueName
from workflows.redis_values import text

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from workflows.client import JobsClient

WEBHOOK_PATH = "/webhook"
METRICS_PATH = "/metrics"
# GitHub's 10-second delivery timeout is the last bucket that matters; the handler normally answers in ms.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_BODY_LIMIT = 4096  # the webhook's answers are small JSON objects; more is never read


class WebhookOutcome(str, enum.Enum):
    """What ``POST /webhook`` did with a delivery (the ``outcome`` label)."""

    QUEUED = "queued"  # 202: handlers put on the work queue
    IGNORED = "ignored"  # 200: no handler for this event/action
    PONG = "pong"  # 200: GitHub's ping
    DUPLICATE = "duplicate"  # 200: a redelivery of a delivery already handled
    IN_PROGRESS = "in_progress"  # 409: a copy of a delivery being handled right now
    BAD_SIGNATURE = "bad_signature"  # 401: missing or wrong X-Hub-Signature-256
    NO_INSTALLATION = "no_installation"  # 400: a routed event without an App installation
    MALFORMED = "malformed"  # 400: headers missing, body not a JSON object, payload not of the event's shape
    TOO_LARGE = "too_large"  # 413: a body over GitHub's payload limit
    REDIS_UNAVAILABLE = "redis_unavailable"  # 503: nothing could be recorded
    ERROR = "error"  # anything else (an exception: 500)


REJECTED = {WebhookOutcome.BAD_SIGNATURE: "bad_signature", WebhookOutcome.DUPLICATE: "duplicate",
            WebhookOutcome.IN_PROGRESS: "in_progress"}


def classify(status: int, body: bytes) -> WebhookOutcome:
    """The outcome of a webhook answer, from its status code and (for 200 and 400) its JSON body (pure).

    The body's wording is ``bot.app``'s; tests/bot/test_metrics.py drives every outcome through the real
    app, so a reworded answer fails there rather than being counted under the wrong outcome."""
    if status == 202:
        return WebhookOutcome.QUEUED
    if status == 401:
        return WebhookOutcome.BAD_SIGNATURE
    if status == 409:
        return WebhookOutcome.IN_PROGRESS
    if status == 503:
        return WebhookOutcome.REDIS_UNAVAILABLE
    if status == 413:
        return WebhookOutcome.TOO_LARGE
    if status not in (200, 400):
        return WebhookOutcome.ERROR
    try:
        answer = json.loads(body)
    except ValueError:
        answer = None
    answer = answer if isinstance(answer, dict) else {}
    if status == 400:
        uninstalled = str(answer.get("error", "")).startswith("event has no installation")
        return WebhookOutcome.NO_INSTALLATION if uninstalled else WebhookOutcome.MALFORMED
    said = str(answer.get("status", ""))
    if said == "pong":
        return WebhookOutcome.PONG
    if said.startswith("duplicate"):
        return WebhookOutcome.DUPLICATE
    return WebhookOutcome.IGNORED


def event_label(name: str | None, outcome: WebhookOutcome, events: Collection[str]) -> str:
    """The ``event`` label: a routed event's name, never a free-form header value (pure).

    The signature covers the body only, so even a signed delivery's ``X-GitHub-Event`` could be anything a
    replayer likes: only names in ``events`` (plus ``ping``) become labels, which bounds the series."""
    if outcome is WebhookOutcome.BAD_SIGNATURE:
        return "unverified"
    if not name:
        return "none"
    return name if name in events or name == "ping" else "other"


class WebhookMetrics:
    """The webhook's histogram and rejection counter, in ``registry``."""

    def __init__(self, registry: CollectorRegistry, events: Collection[str]) -> None:
        self.events = frozenset(events)
        self.latency = Histogram("kernelevo_webhook_duration_seconds",
                                 "Time POST /webhook took to answer, by event and outcome.",
                                 ["event", "outcome"], buckets=LATENCY_BUCKETS, registry=registry)
        self.rejected = Counter("kernelevo_webhook_rejected",
                                "Deliveries refused: bad_signature (401), duplicate (an already handled"
                                " delivery, 200), in_progress (a copy of one being handled, 409).",
                                ["reason"], registry=registry)
        for reason in REJECTED.values():
            self.rejected.labels(reason=reason)  # every reason is exported from the start, at 0

    def record(self, name: str | None, outcome: WebhookOutcome, seconds: float) -> None:
        """Count one answered delivery."""
        self.latency.labels(event=event_label(name, outcome, self.events), outcome=outcome.value).observe(seconds)
        if outcome in REJECTED:
            self.rejected.labels(reason=REJECTED[outcome]).inc()


class WebhookTimer:
    """ASGI middleware: times ``POST /webhook`` from the request to the end of its answer.

    Only the answer's status and first bytes are looked at (to classify it); every other route passes
    through untouched."""

    def __init__(self, app: ASGIApp, metrics: WebhookMetrics, clock: Callable[[], float] = time.perf_counter) -> None:
        self.app, self.metrics, self.clock = app, metrics, clock

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != WEBHOOK_PATH or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        started = self.clock()
        name = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"x-github-event"), None)
        status, body, recorded = 500, b"", False

        async def watch(message: Message) -> None:
            nonlocal status, body, recorded
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body" and not recorded:
                body = (body + message.get("body", b""))[:_BODY_LIMIT]
                if not message.get("more_body", False):
                    recorded = True
                    self.metrics.record(name, classify(status, body), self.clock() - started)
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if not recorded:  # the endpoint raised (Starlette answers 500 outside this middleware)
                self.metrics.record(name, WebhookOutcome.ERROR, self.clock() - started)


def queue_keys(queue: QueueName) -> list[str]:
    """The Redis lists holding a Celery queue's messages: kombu's Redis transport keeps one list per
    priority step, the queue's own name for priority 0 and ``<name><sep><step>`` for the others."""
    return [queue.value if step == 0 else f"{queue.value}{KombuRedisChannel.sep}{step}" for step in PRIORITY_STEPS]


class RedisCollector(Collector):
    """Queue depths and live jobs, read from Redis at scrape time.

    Cheap by construction: one pipeline of ``LLEN`` per queue list, ``HLEN`` of kombu's unacked hash, and
    the records of the store's *active* index only (jobs not yet terminal); finished jobs are never
    scanned (the store keeps no per-state index of them; ``kernelevo_jobs_retained`` counts them all).
    If Redis cannot be reached the scrape still answers, with ``kernelevo_metrics_redis_up 0``. The store is
    looked up on ``jobs`` at each scrape only, so building the app touches nothing."""

    LIVE_STATES = tuple(s for s in JobState if not s.terminal)

    def __init__(self, jobs: JobsClient, *, repo_labels: bool = False) -> None:
        self.jobs, self.repo_labels = jobs, repo_labels

    def _families(self) -> dict[str, GaugeMetricFamily]:
        job_labels = ["state", "repo"] if self.repo_labels else ["state"]
        return {
            "up": GaugeMetricFamily("kernelevo_metrics_redis_up",
                                    "1 if this scrape could read Redis (the numbers below), else 0."),
            "queue": GaugeMetricFamily("kernelevo_queue_messages",
                                       "Messages waiting in a Celery queue (gpu, cpu, bot), all priorities.",
                                       labels=["queue"]),
            "unacked": GaugeMetricFamily("kernelevo_queue_unacked_messages",
                                         "Messages delivered to a worker and not yet acknowledged (running"
                                         " chunks and bot tasks), all queues."),
            "jobs": GaugeMetricFamily("kernelevo_jobs", "Jobs not yet finished, by state"
                                      + (" and repository." if self.repo_labels else "."), labels=job_labels),
            "retained": GaugeMetricFamily("kernelevo_jobs_retained",
                                          "Job records in the store's index, every state (finished ones until"
                                          " their retention ends)."),
        }

    def describe(self) -> Iterable[Metric]:
        return list(self._families().values())

    def collect(self) -> Iterable[Metric]:
        families = self._families()
        try:
            self._read(families)
        except redis.RedisError:
            families = {"up": families["up"]}
            families["up"].add_metric([], 0)
        else:
            families["up"].add_metric([], 1)
        return list(families.values())

    def _read(self, families: dict[str, GaugeMetricFamily]) -> None:
        client, keys = self.jobs.store.client, self.jobs.store.keys
        with client.pipeline(transaction=False) as pipe:
            for queue in QueueName:
                for key in queue_keys(queue):
                    pipe.llen(key)
            pipe.hlen(KombuRedisChannel.unacked_key)
            pipe.zcard(keys.jobs)
            pipe.smembers(keys.active)
            replies = pipe.execute()
        steps = len(PRIORITY_STEPS)
        for i, queue in enumerate(QueueName):
            families["queue"].add_metric([queue.value], sum(replies[i * steps:(i + 1) * steps]))
        unacked, retained, active = replies[len(QueueName) * steps:]
        families["unacked"].add_metric([], unacked)
        families["retained"].add_metric([], retained)
        for labels, count in sorted(self._live(client, [keys.job(text(i)) for i in active]).items()):
            families["jobs"].add_metric(list(labels), count)

    def _live(self, client: redis.Redis, job_keys: list[str]) -> Tally[tuple[str, ...]]:
        counts: Tally[tuple[str, ...]] = Tally()
        if not self.repo_labels:
            counts.update({(state.value,): 0 for state in self.LIVE_STATES})  # exported even when zero
        raws = client.mget(job_keys) if job_keys else []
        for raw in raws:
            if raw is None:  # finished and expired between the two reads
                continue
            try:
                record = JobRecord.model_validate_json(raw)
            except ValidationError:  # written by another version of the worker tier: not this scrape's business
                continue
            if record.state.terminal:  # finished between the two reads: not live any more
                continue
            counts[(record.state.value, record.spec.repo) if self.repo_labels else (record.state.value,)] += 1
        return counts


def render(registry: CollectorRegistry, accept: str | None) -> tuple[bytes, str]:
    """The exposition for an ``Accept`` header: Prometheus text, or OpenMetrics when the scraper asks."""
    encoder, content_type = choose_encoder(accept or "")
    return encoder(registry), content_type


def register(app: Starlette, jobs: JobsClient, *, events: Collection[str], repo_labels: bool = False,
             clock: Callable[[], float] = time.perf_counter) -> CollectorRegistry:
    """Add ``GET /metrics`` and the webhook timer to ``app`` (before it serves); returns the registry.

    ``jobs`` is the worker tier's client (``ctx.jobs``): its store's Redis is also Celery's broker
    (``workflows.celery_app`` uses one URL for both). ``events`` are the event names the App routes (the
    only ``event`` label values besides ``ping``). ``repo_labels`` adds a ``repo`` label to ``kernelevo_jobs``:
    off by default, because the endpoint is unauthenticated and repository names can be private."""
    registry = CollectorRegistry()
    webhooks = WebhookMetrics(registry, events)
    registry.register(RedisCollector(jobs, repo_labels=repo_labels))

    async def metrics(request: Request) -> Response:
        data, content_type = await run_in_threadpool(render, registry, request.headers.get("accept"))
        return Response(data, headers={"Content-Type": content_type})

    app.add_route(METRICS_PATH, metrics, methods=["GET"])
    app.add_middleware(WebhookTimer, metrics=webhooks, clock=clock)
    return registry

