"""``GET /metrics``: the real web app under uvicorn on loopback, a real redis-server, real Celery messages.

The app is built as ``kernelevo serve`` builds it (``bot.service.build`` against the fake GitHub), then
``bot.metrics.register`` adds the route and the webhook timer. Every webhook outcome is produced through
the real endpoint and read back from the scrape; queue depths and job counts are checked against what the
test itself put into Redis (Celery messages, jobs through the worker tier's client).
"""

from __future__ import annotations

import json
import socket
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from bot_harness import INSTALLATION, REPO, free_port, settings_for, wait_for
from github_server import FIXTURES
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from bot import metrics
from bot.deliveries import Deliveries
from bot.metrics import WebhookOutcome, classify, event_label, queue_keys
from bot.signature import sign
from kernelevo.settings import Settings
from workflows.models import QueueName

SECRET = "metrics-secret"


@dataclass
class Served:
    http: httpx.Client
    ctx: Any
    redis: Any

    def send(self, event: str | None, payload: Any, *, delivery: str | None = None, signed: bool = True,
             body: bytes | None = None) -> httpx.Response:
        raw = body if body is not None else json.dumps(payload).encode()
        headers = {"X-GitHub-Delivery": delivery or str(uuid.uuid4()), "Content-Type": "application/json"}
        if event is not None:
            headers["X-GitHub-Event"] = event
        if signed:
            headers["X-Hub-Signature-256"] = sign(SECRET, raw)
        return self.http.post("/webhook", content=raw, headers=headers)

    def scrape(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """``{(sample name, sorted labels): value}`` of one scrape."""
        response = self.http.get("/metrics")
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for family in text_string_to_metric_families(response.text) for s in family.samples}


def value(scrape: dict, name: str, **labels: str) -> float:
    return scrape.get((name, tuple(sorted(labels.items()))), 0.0)


def webhook_count(scrape: dict, event: str, outcome: str) -> float:
    return value(scrape, "kernelevo_webhook_duration_seconds_count", event=event, outcome=outcome)


@pytest.fixture
def served(redis_server, fake, app_keys) -> Iterator[Served]:
    from bot.service import build

    settings = Settings(**{**settings_for(redis_server.url).model_dump(), "webhook_secret": SECRET,
                           "github_app_id": fake.app_id, "github_private_key": app_keys[0],
                           "github_api_url": fake.base_url, "bot_workers": 2})
    asgi, ctx = build(settings)  # bot.app.create_app registers /metrics and the webhook timer
    server = uvicorn.Server(uvicorn.Config(asgi, host="127.0.0.1", port=free_port(), log_level="warning",
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started, "uvicorn to listen", timeout=60)
    port = server.servers[0].sockets[0].getsockname()[1]
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        yield Served(http, ctx, redis_server)
    server.should_exit = True
    thread.join(30)
    ctx.work.stop()


def fixture_payload(name: str) -> dict:
    payload = json.loads((FIXTURES / name).read_text())
    payload["installation"] = {"id": INSTALLATION}
    payload["repository"] = {"full_name": REPO}
    return payload


def test_every_webhook_outcome_is_timed_and_rejections_are_counted(served):
    before = served.scrape()
    assert value(before, "kernelevo_webhook_rejected_total", reason="bad_signature") == 0  # exported at 0
    assert served.send("ping", {"zen": "hi", "hook_id": 1}).json() == {"status": "pong"}
    assert served.send("issue_comment", {"action": "created"}, signed=False).status_code == 401
    assert served.send("star", {"action": "created", "repository": {"full_name": REPO}}).json()["status"] == "ignored"
    assert served.send(None, {"action": "created"}).status_code == 400  # no X-GitHub-Event
    assert served.send("issue_comment", None, body=b"not json").status_code == 400
    uninstalled = fixture_payload("issue_comment_created.with-installation.json")
    del uninstalled["installation"]
    assert "install" in served.send("issue_comment", uninstalled).json()["error"]

    installed = fixture_payload("installation_created.json")
    installed["repositories"] = [{"full_name": REPO}]
    assert served.send("installation", installed, delivery="d-done").status_code == 202
    state = served.ctx.state
    wait_for(lambda: state.client.get(state.key("delivery", "d-done")) == b"done", "the delivery to be handled")
    assert "duplicate" in served.send("installation", installed, delivery="d-done").json()["status"]
    Deliveries(state).claim("d-busy")  # another replica is handling this delivery right now
    assert served.send("installation", installed, delivery="d-busy").status_code == 409
    with socket.create_connection(("127.0.0.1", served.http.base_url.port), timeout=30) as conn:
        conn.sendall(b"POST /webhook HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: issue_comment\r\n"
                     b"X-GitHub-Delivery: big\r\nContent-Length: 67108864\r\n\r\n" + b"{" * 1024)
        assert conn.recv(4096).startswith(b"HTTP/1.1 413")

    after = served.scrape()
    expected = {("ping", "pong"): 1, ("unverified", "bad_signature"): 1, ("other", "ignored"): 1,
                ("none", "malformed"): 1, ("issue_comment", "malformed"): 1, ("issue_comment", "no_installation"): 1,
                ("installation", "queued"): 1, ("installation", "duplicate"): 1, ("installation", "in_progress"): 1,
                ("issue_comment", "too_large"): 1}
    seen = {(dict(labels)["event"], dict(labels)["outcome"]): v for (name, labels), v in after.items()
            if name == "kernelevo_webhook_duration_seconds_count"}
    assert seen == expected
    counted = {(dict(labels)["event"], dict(labels)["outcome"]): v for (name, labels), v in after.items()
               if name == "kernelevo_webhook_deliveries_total"}
    assert counted == expected, "every answered delivery is counted once under its event and outcome"
    assert {outcome for _, outcome in counted} <= {o.value for o in WebhookOutcome}
    for reason in ("bad_signature", "duplicate", "in_progress"):
        assert value(after, "kernelevo_webhook_rejected_total", reason=reason) == 1
    assert value(after, "kernelevo_webhook_duration_seconds_bucket", event="ping", outcome="pong", le="+Inf") == 1
    assert served.http.get("/healthz").json()["status"] == "ok"  # other routes are untouched
    text = served.http.get("/metrics").text
    for private in ("acme", "models", "d-done", "d-busy", SECRET):  # repository, delivery ids, the secret
        assert private not in text


def test_event_labels_stay_bounded_whatever_the_header_says(served):
    """The signature covers the body only: a replayer can send any X-GitHub-Event with a signed body."""
    for i in range(25):
        assert served.send(f"made_up_{i}", {"action": "x"}).status_code == 200
    events = {dict(labels)["event"] for (name, labels) in served.scrape()
              if name == "kernelevo_webhook_duration_seconds_count"}
    assert events == {"other"}


def _send_celery(app: Any, queue: QueueName, priority: int | None = None) -> None:
    app.send_task("kernelevo.test.nothing", queue=queue.value, priority=priority)


def test_queue_depths_and_live_jobs_come_from_redis(served, tmp_path: Path):
    from workflows.celery_app import make_app
    from workflows.client import JobsClient
    from workflows.models import ClaimOutcome, JobSpec, JobState, Origin, OriginKind, WorkerIdentity
    from workflows.repo_tarball import pack_repo

    jobs = JobsClient.from_settings(settings_for(served.redis.url))
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "ops.py").write_text("x = 1\n")
    source = jobs.upload_repo(pack_repo(tmp_path / "repo", max_unpacked_bytes=2**20, max_files=10))

    def submit(op: str, device: str) -> str:
        spec = JobSpec(repo="secret-org/private-repo", commit_sha="c" * 40, op_id=f"ops.py::{op}", source=source,
                       device=device, origin=Origin(kind=OriginKind.CLI))
        return jobs.submit(spec).record.id

    queued, running, finished = submit("a", "cpu"), submit("b", "cuda"), submit("c", "cuda")
    worker = WorkerIdentity(node="gpu0@test", pid=1, device="cuda")
    epochs = {}
    for job_id in (running, finished):  # what a GPU worker's chunk does (workflows.chunk)
        epochs[job_id] = jobs.get(job_id).epoch
        assert jobs.store.claim(job_id, epochs[job_id], worker).outcome is ClaimOutcome.RUN
    jobs.store.finish(finished, epochs[finished], worker, JobState.SUCCEEDED)
    celery = make_app(settings_for(served.redis.url))
    _send_celery(celery, QueueName.BOT)
    _send_celery(celery, QueueName.BOT, priority=5)  # kept in another list by kombu: counted too
    _send_celery(celery, QueueName.GPU, priority=9)

    scrape = served.scrape()
    assert value(scrape, "kernelevo_metrics_redis_up") == 1
    # every submit sent one chunk message (no worker consumes them here), plus the test's own messages
    assert value(scrape, "kernelevo_queue_messages", queue="gpu") == 3
    assert value(scrape, "kernelevo_queue_messages", queue="cpu") == 1
    assert value(scrape, "kernelevo_queue_messages", queue="bot") == 2
    assert value(scrape, "kernelevo_jobs", state="queued") == 1
    assert value(scrape, "kernelevo_jobs", state="running") == 1
    assert value(scrape, "kernelevo_jobs_retained") == 3
    assert jobs.get(queued).state is JobState.QUEUED
    assert sum(served.redis.client().llen(k) for k in queue_keys(QueueName.BOT)) == 2  # the keys kombu wrote

    text = served.http.get("/metrics").text
    for private in ("secret-org", "private-repo", SECRET, "ops.py", "job-"):
        assert private not in text
    opted_in = CollectorRegistry()
    opted_in.register(metrics.RedisCollector(jobs, repo_labels=True))
    families = {f.name: f for f in text_string_to_metric_families(generate_latest(opted_in).decode())}
    assert {(s.labels["state"], s.labels["repo"], s.value) for s in families["kernelevo_jobs"].samples} == {
        ("queued", "secret-org/private-repo", 1), ("running", "secret-org/private-repo", 1)}


def test_scrape_answers_without_redis(served):
    served.redis.stop()
    response = served.http.get("/metrics")
    assert response.status_code == 200
    scrape = {(s.name, tuple(sorted(s.labels.items()))): s.value
              for f in text_string_to_metric_families(response.text) for s in f.samples}
    assert value(scrape, "kernelevo_metrics_redis_up") == 0
    assert not any(name == "kernelevo_queue_messages" for name, _ in scrape)
    assert served.send("ping", {"zen": "hi"}).status_code == 503
    assert webhook_count(served.scrape(), "ping", "redis_unavailable") == 1


def test_openmetrics_on_request(served):
    response = served.http.get("/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert response.headers["content-type"].startswith("application/openmetrics-text")
    assert response.text.rstrip().endswith("# EOF")


def test_classify():
    """Every answer of the webhook is typed (``metrics.answer``): what is not, the 500 of an endpoint that raised,
    is an error."""
    assert classify(500) is WebhookOutcome.ERROR


def test_event_label():
    events = {"issue_comment"}
    assert event_label("issue_comment", WebhookOutcome.QUEUED, events) == "issue_comment"
    assert event_label("issue_comment", WebhookOutcome.BAD_SIGNATURE, events) == "unverified"
    assert event_label("ping", WebhookOutcome.PONG, events) == "ping"
    assert event_label("<script>", WebhookOutcome.IGNORED, events) == "other"
    assert event_label(None, WebhookOutcome.MALFORMED, events) == "none"


def test_queue_keys_are_kombus():
    from kombu.transport.redis import Channel

    assert queue_keys(QueueName.GPU)[0] == "gpu"
    assert {Channel._q_for_pri(Channel.__new__(Channel), "gpu", p) for p in range(10)} == set(queue_keys(QueueName.GPU))


def test_finished_jobs_are_counted_by_terminal_state(served, tmp_path: Path):
    """Each job that ends counts once under its terminal state, whichever path ended it (a worker's finish, a
    cancel before it ran, the reaper giving up), and the counts outlive the records' retention."""
    from workflows.client import JobsClient
    from workflows.models import ClaimOutcome, JobSpec, JobState, Origin, OriginKind, WorkerIdentity
    from workflows.repo_tarball import pack_repo

    jobs = JobsClient.from_settings(settings_for(served.redis.url))
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "ops.py").write_text("x = 1\n")
    source = jobs.upload_repo(pack_repo(tmp_path / "repo", max_unpacked_bytes=2**20, max_files=10))
    worker = WorkerIdentity(node="gpu0@test", pid=1, device="cuda")
    exported = {dict(labels)["state"]: v for (name, labels), v in served.scrape().items()
                if name == "kernelevo_jobs_finished_total"}
    assert exported == {state.value: 0 for state in JobState if state.terminal}, "every terminal state, at 0"

    def run(op: str) -> tuple[str, int]:
        spec = JobSpec(repo="acme/models", commit_sha="d" * 40, op_id=f"ops.py::{op}", source=source,
                       origin=Origin(kind=OriginKind.CLI))
        record = jobs.submit(spec).record
        assert jobs.store.claim(record.id, record.epoch, worker).outcome is ClaimOutcome.RUN
        return record.id, record.epoch

    for op, state in (("a", JobState.SUCCEEDED), ("b", JobState.SUCCEEDED), ("c", JobState.NO_IMPROVEMENT),
                      ("d", JobState.FAILED)):
        job_id, epoch = run(op)
        jobs.store.finish(job_id, epoch, worker, state)
    queued = jobs.submit(JobSpec(repo="acme/models", commit_sha="d" * 40, op_id="ops.py::e", source=source,
                                 origin=Origin(kind=OriginKind.CLI))).record.id
    jobs.cancel(queued)
    jobs.cancel(queued)  # already finished: not counted again
    after = served.scrape()
    assert {state: value(after, "kernelevo_jobs_finished_total", state=state.value) for state in JobState
            if state.terminal} == {JobState.SUCCEEDED: 2, JobState.NO_IMPROVEMENT: 1, JobState.FAILED: 1,
                                   JobState.CANCELLED: 1}
    served.redis.client().delete(*[f"kernelevo:job:{job}" for job in served.redis.client().zrange("kernelevo:jobs",
                                                                                                    0, -1)])
    assert value(served.scrape(), "kernelevo_jobs_finished_total", state="succeeded") == 2  # past retention


class NoRedis:
    """A jobs client whose Redis is down: the scrape still answers (kernelevo_metrics_redis_up 0)."""

    @property
    def store(self):
        import redis

        raise redis.ConnectionError("no Redis in this test")


def test_an_outcome_given_by_the_endpoint_is_counted_as_given():
    """The typed way: the endpoint answers through ``metrics.answer``; its outcome is counted whatever the body
    says, and its status is the outcome's."""
    from starlette.applications import Starlette
    from starlette.routing import Route
    from starlette.testclient import TestClient

    async def webhook(request):
        return metrics.answer(request, WebhookOutcome.DUPLICATE, {"status": "seen before"})  # no "duplicate" word

    app = Starlette(routes=[Route("/webhook", webhook, methods=["POST"])])
    registry = metrics.register(app, NoRedis(), events={"issue_comment"})
    with TestClient(app) as client:
        response = client.post("/webhook", content=b"{}", headers={"X-GitHub-Event": "issue_comment"})
    assert response.status_code == WebhookOutcome.DUPLICATE.status == 200
    scrape = {(s.name, tuple(sorted(s.labels.items()))): s.value
              for f in text_string_to_metric_families(generate_latest(registry).decode()) for s in f.samples}
    assert value(scrape, "kernelevo_webhook_deliveries_total", event="issue_comment", outcome="duplicate") == 1
    assert value(scrape, "kernelevo_webhook_rejected_total", reason="duplicate") == 1
    assert value(scrape, "kernelevo_webhook_deliveries_total", event="issue_comment", outcome="ignored") == 0


def test_an_untyped_answer_and_an_exception_count_as_errors():
    """Only :func:`metrics.answer` says what a delivery's outcome was: a plain 200 is not guessed to be "ignored",
    and an endpoint that raised (Starlette's 500) is an error too."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    async def webhook(request):
        if request.headers.get("x-github-event") == "boom":
            raise RuntimeError("the endpoint raised")
        return JSONResponse({"status": "ignored"})  # reads like an ignored delivery, but is not typed

    app = Starlette(routes=[Route("/webhook", webhook, methods=["POST"])])
    registry = metrics.register(app, NoRedis(), events={"issue_comment"})
    with TestClient(app, raise_server_exceptions=False) as client:
        assert client.post("/webhook", content=b"{}", headers={"X-GitHub-Event": "issue_comment"}).status_code == 200
        assert client.post("/webhook", content=b"{}", headers={"X-GitHub-Event": "boom"}).status_code == 500
    counted = {(s.labels["event"], s.labels["outcome"]): s.value
               for f in text_string_to_metric_families(generate_latest(registry).decode())
               if f.name == "kernelevo_webhook_deliveries" for s in f.samples}
    assert counted == {("issue_comment", "error"): 1, ("other", "error"): 1}


def test_every_outcome_has_its_status():
    assert {o: o.status for o in WebhookOutcome} == {
        WebhookOutcome.QUEUED: 202, WebhookOutcome.IGNORED: 200, WebhookOutcome.PONG: 200,
        WebhookOutcome.DUPLICATE: 200, WebhookOutcome.IN_PROGRESS: 409, WebhookOutcome.BAD_SIGNATURE: 401,
        WebhookOutcome.NO_INSTALLATION: 400, WebhookOutcome.MALFORMED: 400, WebhookOutcome.TOO_LARGE: 413,
        WebhookOutcome.REDIS_UNAVAILABLE: 503, WebhookOutcome.ERROR: 500}
