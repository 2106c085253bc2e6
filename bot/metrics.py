"""``GET /metrics`` of the web process (Prometheus text format) and the webhook latency it reports.

:func:`register` adds the route and a small ASGI middleware to the app :func:`bot.app.create_app` built.
The middleware times every ``POST /webhook`` and counts it under its :class:`~bot.routing.WebhookOutcome`:
the one the endpoint answered with through :func:`answer` (a typed value, carried in the request's
state); an answer given any other way is an error (:func:`classify`). The Redis-backed numbers
(Celery queue depths, live jobs by state, finished jobs by terminal state) are read when Prometheus
scrapes, by :class:`RedisCollector`, so they are never stale and cost nothing between scrapes.
Everything lives in a registry of its own: no process, platform or GC collectors.

The endpoint is unauthenticated, so no label carries anything a user controls: the event label is one
of the events the App routes (or ``ping``, ``other``, ``unverified``, ``none``), outcomes and queues are
enums, and repository names appear only when the operator opts in (``repo_labels``).
"""

from __future__ import annotations

import time
from collections import Counter as Tally
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING

import redis
from kombu.transport.redis import PRIORITY_STEPS
from kombu.transport.redis import Channel as KombuRedisChannel
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from bot.routing import WebhookOutcome
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
OUTCOME_STATE = "kernelevo_webhook_outcome"  # the request-state key :func:`answer` sets and the timer reads
__all__ = ["WebhookOutcome", "answer", "classify", "event_label", "queue_keys", "register"]


def answer(request: Request, outcome: WebhookOutcome, content: dict[str, object]) -> JSONResponse:
    """The webhook's answer for ``outcome``: its status is the outcome's, and the outcome itself is left in the
    request's state (the ASGI scope), where :class:`WebhookTimer` counts it as given, not as parsed."""
    setattr(request.state, OUTCOME_STATE, outcome)
    return JSONResponse(content, status_code=outcome.status)


def marked_outcome(scope: Scope) -> WebhookOutcome | None:
    """The outcome :func:`answer` recorded for this request, if it was answered through it."""
    outcome = (scope.get("state") or {}).get(OUTCOME_STATE)
    return outcome if isinstance(outcome, WebhookOutcome) else None


REJECTED = {WebhookOutcome.BAD_SIGNATURE: "bad_signature", WebhookOutcome.DUPLICATE: "duplicate",
            WebhookOutcome.IN_PROGRESS: "in_progress"}


def classify(status: int) -> WebhookOutcome:
    """The outcome of an answer not given through :func:`answer`: an error, whatever its status (pure).

    Every answer of ``bot.app``'s webhook goes through :func:`answer`, so only the 500 of an endpoint that raised
    (or a new answer someone forgot to type) comes here. Its status is deliberately not read: a 200 or 400 that
    bypassed :func:`answer` would otherwise be counted under a guessed outcome instead of showing up as an error."""
    return WebhookOutcome.ERROR


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
    """The webhook's delivery counter, histogram and rejection counter, in ``registry``."""

    def __init__(self, registry: CollectorRegistry, events: Collection[str]) -> None:
        self.events = frozenset(events)
        self.deliveries = Counter("kernelevo_webhook_deliveries",
                                  "Deliveries POST /webhook answered, by event and outcome.",
                                  ["event", "outcome"], registry=registry)
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
        labels = {"event": event_label(name, outcome, self.events), "outcome": outcome.value}
        self.deliveries.labels(**labels).inc()
        self.latency.labels(**labels).observe(seconds)
        if outcome in REJECTED:
            self.rejected.labels(reason=REJECTED[outcome]).inc()


class WebhookTimer:
    """ASGI middleware: times ``POST /webhook`` from the request to the end of its answer.

    The outcome is the one the endpoint gave through :func:`answer`; nothing of the answer's body is read.
    Every other route passes through untouched."""

    def __init__(self, app: ASGIApp, metrics: WebhookMetrics, clock: Callable[[], float] = time.perf_counter) -> None:
        self.app, self.metrics, self.clock = app, metrics, clock

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != WEBHOOK_PATH or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        started = self.clock()
        name = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"x-github-event"), None)
        status, recorded = 500, False

        async def watch(message: Message) -> None:
            nonlocal status, recorded
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body" and not recorded and not message.get("more_body", False):
                recorded = True
                outcome = marked_outcome(scope) or classify(status)
                self.metrics.record(name, outcome, self.clock() - started)
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
    the records of the store's *active* index only (jobs not yet terminal), and the store's counts of finished
    jobs by terminal state (``HGETALL``, counted by the store as each job ends); finished records are never
    scanned (``kernelevo_jobs_retained`` counts the records kept, every state).
    If Redis cannot be reached the scrape still answers, with ``kernelevo_metrics_redis_up 0``. The store is
    looked up on ``jobs`` at each scrape only, so building the app touches nothing."""

    LIVE_STATES = tuple(s for s in JobState if not s.terminal)
    TERMINAL_STATES = tuple(s for s in JobState if s.terminal)

    def __init__(self, jobs: JobsClient, *, repo_labels: bool = False) -> None:
        self.jobs, self.repo_labels = jobs, repo_labels

    def _families(self) -> dict[str, GaugeMetricFamily | CounterMetricFamily]:
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
            "finished": CounterMetricFamily("kernelevo_jobs_finished",
                                            "Jobs that ended, by terminal state (succeeded, no_improvement,"
                                            " failed, cancelled), since the job store was created.",
                                            labels=["state"]),
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

    def _read(self, families: dict[str, GaugeMetricFamily | CounterMetricFamily]) -> None:
        client, keys = self.jobs.store.client, self.jobs.store.keys
        with client.pipeline(transaction=False) as pipe:
            for queue in QueueName:
                for key in queue_keys(queue):
                    pipe.llen(key)
            pipe.hlen(KombuRedisChannel.unacked_key)
            pipe.zcard(keys.jobs)
            pipe.smembers(keys.active)
            pipe.hgetall(keys.finished)
            replies = pipe.execute()
        steps = len(PRIORITY_STEPS)
        for i, queue in enumerate(QueueName):
            families["queue"].add_metric([queue.value], sum(replies[i * steps:(i + 1) * steps]))
        unacked, retained, active, finished = replies[len(QueueName) * steps:]
        families["unacked"].add_metric([], unacked)
        families["retained"].add_metric([], retained)
        counts = {text(state): int(count) for state, count in finished.items()}
        for state in self.TERMINAL_STATES:  # every terminal state, at 0 until a job ends in it; nothing else
            families["finished"].add_metric([state.value], counts.get(state.value, 0))
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

