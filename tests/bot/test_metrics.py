"""``GET /metrics``: the real web app under uvicorn on loopback, a real redis-server, real Celery messages.

The app is built as ``kernelevo serve`` builds it (``bot.service.build`` against the fake GitHub), then
``bot.metrics.register`` adds the route and the webhook timer. Every webhook outcome is produced through
the real endpoint and read back from the scrape; queue depths and job counts are checked against what the
test itself put into Redis (Celery messages, jobs through the worker tier's client).
"""

from __future__ import annotations

import json
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
from test_app_manifest import routed_events

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
    asgi, ctx = build(settings)
    metrics.register(asgi, ctx.jobs, events=routed_events())
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

    after = served.scrape()
    expected = {("ping", "pong"): 1, ("unverified", "bad_signature"): 1, ("other", "ignored"): 1,
                ("none", "malformed"): 1, ("issue_comment", "malformed"): 1, ("issue_comment", "no_installation"): 1,
                ("installation", "queued"): 1, ("installation", "duplicate"): 1, ("installation", "in_progress"): 1}
    seen = {(dict(labels)["event"], dict(labels)["outcome"]): v for (name, labels), v in after.items()
            if name == "kernelevo_webhook_duration_seconds_count"}
    assert seen == expected
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


@pytest.mark.parametrize(("status", "body", "outcome"), [
    (202, b'{"status": "queued", "handlers": 1}', WebhookOutcome.QUEUED),
    (200, b'{"status": "ignored", "handlers": 0}', WebhookOutcome.IGNORED),
    (200, b'{"status": "pong"}', WebhookOutcome.PONG),
    (200, b'{"status": "duplicate delivery ignored", "delivery": "x"}', WebhookOutcome.DUPLICATE),
    (409, b"{}", WebhookOutcome.IN_PROGRESS),
    (401, b"{}", WebhookOutcome.BAD_SIGNATURE),
    (400, b'{"error": "event has no installation: install KernelEvo"}', WebhookOutcome.NO_INSTALLATION),
    (400, b'{"error": "malformed issue_comment payload: installation.id: not an int"}', WebhookOutcome.MALFORMED),
    (413, b'{"error": "body larger than 26214400 bytes"}', WebhookOutcome.TOO_LARGE),
    (400, b'{"error": "body is not JSON"}', WebhookOutcome.MALFORMED),
    (400, b"garbage", WebhookOutcome.MALFORMED),
    (503, b"{}", WebhookOutcome.REDIS_UNAVAILABLE),
    (500, b"Internal Server Error", WebhookOutcome.ERROR),
])
def test_classify(status, body, outcome):
    assert classify(status, body) is outcome


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
