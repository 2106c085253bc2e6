"""The status page at ``GET /``: who sees what, its headers, and the page itself in a real headless Chromium.

The browser tests start ``kernelevo serve`` as a real process (the harness's ``start_bot``, a real
redis-server and the fake GitHub), put jobs into the real job store through the worker tier's own API
(submit, then claim and heartbeat as a GPU worker's chunk does; no GPU worker consumes the messages), and
watch the open page follow a job's progress. Every wait is for a condition with a generous timeout.
"""

from __future__ import annotations

import base64
import os
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
from bot_harness import REPO, settings_for, wait_for
from browser import chromium, is_png
from html5_check import html5_valid
from starlette.applications import Starlette
from starlette.testclient import TestClient

from bot import status_page
from bot.status_page import Audience, HiddenCounts, Snapshots, StatusAccess, build_view, render_html
from kernelevo.settings import SettingsError, load_settings
from workflows.models import (
    Budgets,
    ClaimOutcome,
    JobLinks,
    JobProgress,
    JobRecord,
    JobSpec,
    JobState,
    Origin,
    OriginKind,
    RepoSource,
    WorkerIdentity,
)

TOKEN = "operator-token-0123456789abcdef"
PRIVATE_REPO = "secret-org/private-models"
PRIVATE_OP = "ops/confidential_attention.py::secret_kernel"
PRIVATE_WORDS = ("secret-org", "private-models", "confidential_attention", "secret_kernel")
HOSTILE_OP = 'ops/x.py::<img src=x onerror="window.pwned=1">'
SOURCE = RepoSource(blob_key="kernelevo:blob:" + "0" * 64, sha256="0" * 64, size_bytes=0)
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


# -- pure: the policy, the view model, the HTML ----------------------------------------------------------------


def record(repo: str, op: str, state: JobState = JobState.RUNNING, *, pr: int | None = 3, **changes: Any) -> JobRecord:
    spec = JobSpec(repo=repo, commit_sha="c" * 40, op_id=op, source=SOURCE, budgets=Budgets(candidates=32),
                   origin=Origin(kind=OriginKind.PR if pr else OriginKind.CLI, pr_number=pr, base_ref="feature",
                                 requested_by="alice"))
    created = NOW - timedelta(minutes=10)
    values: dict[str, Any] = {"created_at": created, "started_at": created + timedelta(minutes=1)}
    if state.terminal:
        values["finished_at"] = NOW - timedelta(minutes=2)
    return JobRecord(id=f"job-{abs(hash((repo, op, state))) % 16**12:012x}", spec=spec, state=state,
                     **{**values, **changes})


def access_for(token: str | None = None, public_repos: str = "", api_url: str = "https://api.github.com"):
    return StatusAccess.from_values(token=token, public_repos=public_repos, api_url=api_url)


def test_policy_from_the_settings(monkeypatch):
    monkeypatch.setenv("KERNELEVO_STATUS_TOKEN", TOKEN)
    monkeypatch.setenv("KERNELEVO_STATUS_PUBLIC_REPOS", "Acme/Models, octo/cat  bad name,../x")
    monkeypatch.setenv("KERNELEVO_GITHUB_API_URL", "https://ghe.example.com/api/v3")
    settings = load_settings(None)
    assert settings.status_token is not None
    access = access_for(settings.status_token.get_secret_value(), settings.status_public_repos,
                        settings.github_api_url)  # as bot.service.build makes it
    assert access.is_public("acme/models") and access.is_public("ACME/MODELS") and access.is_public("octo/cat")
    assert not access.is_public(PRIVATE_REPO)
    assert access.web_url == "https://ghe.example.com" and access.operator(f"Bearer {TOKEN}")
    assert [p.split(":")[1].strip() for p in access.problems] == ["'bad' is not owner/name; left out",
                                                                 "'name' is not owner/name; left out",
                                                                 "'../x' is not owner/name; left out"]
    assert TOKEN not in repr(access) and TOKEN not in repr(settings)  # SecretStr
    short = access_for("short")
    assert short.operator_token is None and "shorter than 16 characters" in short.problems[0]
    assert access_for().web_url == "https://github.com"
    assert access_for().operator_token is None


def test_a_short_token_stops_the_service_at_start(monkeypatch, tmp_path):
    """A guessable token is refused when the settings are read (``kernelevo serve`` exits naming it), from the
    environment or from its secret file; an empty secret file is "not set" (the operator view is off)."""
    monkeypatch.setenv("KERNELEVO_STATUS_TOKEN", "short-token")
    with pytest.raises(SettingsError, match=r"^KERNELEVO_STATUS_TOKEN: must be at least 16 characters") as caught:
        load_settings(None)
    assert "short-token" not in str(caught.value)
    monkeypatch.delenv("KERNELEVO_STATUS_TOKEN")
    (tmp_path / "kernelevo_status_token").write_text(f"{TOKEN}\n")
    loaded = load_settings(tmp_path).status_token
    assert loaded is not None and loaded.get_secret_value() == TOKEN
    (tmp_path / "kernelevo_status_token").write_text("\n")
    assert load_settings(tmp_path).status_token is None


@pytest.mark.parametrize(("header", "ok"), [
    (f"Bearer {TOKEN}", True),
    ("Basic " + base64.b64encode(f"anyone:{TOKEN}".encode()).decode(), True),
    ("Basic " + base64.b64encode(f"{TOKEN}:".encode()).decode(), False),  # the token is the password
    (f"Bearer {TOKEN}x", False),
    ("Basic !!!", False),
    (f"Token {TOKEN}", False),
    ("", False),
    (None, False),
])
def test_operator_token(header, ok):
    assert access_for(TOKEN).operator(header) is ok
    assert StatusAccess().operator(header) is False  # no token configured: nobody is the operator


def test_anonymous_visitors_see_public_repositories_by_name_and_the_rest_counted():
    access = StatusAccess(public_repos=frozenset({REPO}))
    records = [record(REPO, "ops/norm.py::scale_shift", progress=JobProgress(evaluated=5, timed=True,
                                                                             best_speedup_vs_compile=1.3)),
               record(PRIVATE_REPO, PRIVATE_OP, error="boom at /home/ops/secret"),
               record(PRIVATE_REPO, PRIVATE_OP + "2", JobState.QUEUED),
               record(REPO, "ops/norm.py::other", JobState.QUEUED, waiting_for="job-000000000000")]
    finished = [record(PRIVATE_REPO, PRIVATE_OP, JobState.FAILED, error="secret-org token expired"),
                record(REPO, "ops/norm.py::done", JobState.SUCCEEDED,
                       links=JobLinks(check_run_id=11, follow_up_pr=12))]
    view = build_view(records, finished, access=access, audience=Audience.ANONYMOUS, now=NOW,
                      problems=["an operator-only problem"])
    assert view.hidden == HiddenCounts(queued=1, running=1, finished=1)
    assert [j.op for j in view.running] == ["ops/norm.py::scale_shift"]
    assert [j.op for j in view.queued] == ["ops/norm.py::other"] and view.queued[0].waiting_for_lock
    done = view.finished[0]
    assert done.links.check_run == f"https://github.com/{REPO}/runs/11"
    assert done.links.follow_up == f"https://github.com/{REPO}/pull/12"
    assert done.links.pull_request == f"https://github.com/{REPO}/pull/3"
    assert done.elapsed_s == 7 * 60
    assert view.running[0].best_speedup == 1.3 and view.running[0].baseline == "torch.compile"
    assert view.problems == []
    shown = view.model_dump_json() + render_html(view, "n0nce")
    for word in PRIVATE_WORDS:
        assert word not in shown

    operator = build_view(records, finished, access=access, audience=Audience.OPERATOR, now=NOW,
                          problems=["an operator-only problem"])
    assert operator.hidden.total == 0 and len(operator.running) == 1 + 1 and operator.queued_total == 2
    assert {j.error for j in operator.running} == {None, "boom at /home/ops/secret"}
    assert operator.problems == ["an operator-only problem"]


def test_cli_jobs_get_no_links_and_untimed_jobs_no_speedup():
    access = StatusAccess(public_repos=frozenset({"local/test"}))
    view = build_view([record("local/test", "a.py::f", pr=None, links=JobLinks(check_run_id=4),
                              progress=JobProgress(evaluated=2, best_speedup_vs_compile=9.0, timed=False))], [],
                      access=access, audience=Audience.ANONYMOUS, now=NOW)
    job = view.running[0]
    assert job.links == status_page.Links() and job.best_speedup is None


def test_every_string_is_escaped_in_the_html():
    access = StatusAccess(public_repos=frozenset({REPO}))
    hostile = record(REPO, HOSTILE_OP, base_ref="</script><script>alert(1)</script>", requested_by='"><b>x')
    html = render_html(build_view([hostile], [], access=access, audience=Audience.OPERATOR, now=NOW), "n0nce")
    assert "<img" not in html and "<b>x" not in html and "<script>alert" not in html
    assert "&lt;img src=x onerror=&#34;window.pwned=1&#34;&gt;" in html
    assert html.count("<script") == 1 and html.count('nonce="n0nce"') == 2  # the page's own script and style
    part = render_html(build_view([hostile], [], access=access, audience=Audience.OPERATOR, now=NOW), "n0nce",
                       fragment=True)
    assert part.lstrip().startswith('<time id="generated"') and '<main id="jobs">' in part
    assert "<style" not in part and "<script" not in part and "<img" not in part
    html5_valid(html)


def test_security_headers():
    headers = status_page.security_headers("abc", audience=Audience.ANONYMOUS)
    csp = dict(part.strip().split(" ", 1) for part in headers["Content-Security-Policy"].split(";"))
    assert csp["script-src"] == csp["style-src"] == "'nonce-abc'" and csp["default-src"] == "'none'"
    assert csp["connect-src"] == "'self'" and csp["frame-ancestors"] == "'none'"
    assert headers["X-Content-Type-Options"] == "nosniff" and headers["Cache-Control"] == "no-store"
    assert status_page.security_headers(None, audience=Audience.OPERATOR)["Cache-Control"] == "no-store, private"
    assert "'nonce" not in status_page.security_headers(None, audience=Audience.ANONYMOUS)["Content-Security-Policy"]


def test_snapshots_bound_store_reads():
    reads, now = [], [0.0]

    def read() -> status_page.Records:
        reads.append(now[0])
        return status_page.Records(active=[], finished=[], problems=[])

    snapshots = Snapshots(read, max_age_s=2.0, clock=lambda: now[0])
    for t in (0.0, 0.5, 1.9, 2.0, 2.1, 5.0):
        now[0] = t
        snapshots.get()
    assert reads == [0.0, 2.0, 5.0]


@pytest.mark.parametrize(("seconds", "shown"), [(0, "0s"), (59.9, "59s"), (61, "1m 01s"), (3 * 3600 + 240, "3h 04m"),
                                                 (2 * 86400 + 7200, "2d 02h"), (-5, "0s")])
def test_duration(seconds, shown):
    assert status_page.duration(seconds) == shown


# -- the real store behind the routes -------------------------------------------------------------------------


class Store:
    """Jobs in the test's Redis through the worker tier's client, moved along as a GPU worker's chunk would."""

    def __init__(self, redis_url: str, tmp_path: Path) -> None:
        from workflows.client import JobsClient
        from workflows.repo_tarball import pack_repo

        # a long lease: the bot's reaper must not take the test's "GPU worker" for dead between heartbeats
        self.jobs = JobsClient.from_settings(settings_for(redis_url, queue_heartbeat_ttl_s=3600))
        (tmp_path / "repo").mkdir(exist_ok=True)
        (tmp_path / "repo" / "ops.py").write_text("x = 1\n")
        self.source = self.jobs.upload_repo(pack_repo(tmp_path / "repo", max_unpacked_bytes=2**20, max_files=10))
        self.worker = WorkerIdentity(node="gpu0@status-test", pid=os.getpid(), device="cuda")
        self.epochs: dict[str, int] = {}

    def submit(self, repo: str, op: str, *, pr: int | None = 1, candidates: int = 32) -> str:
        spec = JobSpec(repo=repo, commit_sha="c" * 40, op_id=op, source=self.source,
                       budgets=Budgets(candidates=candidates),
                       origin=Origin(kind=OriginKind.PR if pr else OriginKind.CLI, pr_number=pr, base_ref="feature",
                                     requested_by="alice"))
        return self.jobs.submit(spec).record.id

    def start(self, job_id: str) -> None:
        epoch = self.jobs.get(job_id).epoch
        assert self.jobs.store.claim(job_id, epoch, self.worker).outcome is ClaimOutcome.RUN
        self.epochs[job_id] = epoch

    def progress(self, job_id: str, **values: Any) -> None:
        lease = self.jobs.store.heartbeat(job_id, self.epochs[job_id], self.worker, JobProgress(**values))
        assert not lease.fenced

    def finish(self, job_id: str, state: JobState, **links: int) -> None:
        from workflows.models import JobResult

        self.jobs.store.finish(job_id, self.epochs[job_id], self.worker, state,
                               result=JobResult(stop_reason="plateau"))
        self.jobs.update(job_id, lambda r: r.model_copy(update={"links": JobLinks(**links)}))


def test_routes_without_a_token_and_without_redis(redis_server, tmp_path):
    """The operator view is off without a token (404, saying what to set); a Redis outage is a 503 page that
    says so, never a stack trace or the Redis address."""
    store = Store(redis_server.url, tmp_path)
    store.submit(PRIVATE_REPO, PRIVATE_OP)
    app = Starlette()
    status_page.register(app, store.jobs, StatusAccess(), snapshot_s=0.0)
    with TestClient(app) as client:
        assert client.get("/operator", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 404
        assert "KERNELEVO_STATUS_TOKEN" in client.get("/operator/status.json").text
        feed = client.get("/status.json").json()
        assert feed["hidden"] == {"queued": 1, "running": 0, "finished": 0} and feed["queued"] == []
        redis_server.stop()
        down = client.get("/")
        assert down.status_code == 503 and "cannot be read right now" in down.text
        assert "127.0.0.1" not in down.text and "Traceback" not in down.text
        assert client.get("/status.json").json()["store_error"]


# -- the real bot, in a real browser ---------------------------------------------------------------------------


@pytest.fixture
def served(start_bot, redis_server, tmp_path):
    bot = start_bot(KERNELEVO_STATUS_TOKEN=TOKEN, KERNELEVO_STATUS_PUBLIC_REPOS=f"{REPO},local/test")
    return bot, Store(redis_server.url, tmp_path)


def test_http_answers_of_the_served_page(served):
    bot, store = served
    public = store.submit(REPO, "ops/norm.py::scale_shift")
    store.submit(PRIVATE_REPO, PRIVATE_OP)
    http: httpx.Client = bot.http
    page = http.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    nonce = re.search(r"script-src 'nonce-([A-Za-z0-9_-]+)'", page.headers["content-security-policy"]).group(1)
    assert f'<script nonce="{nonce}">' in page.text and f'<style nonce="{nonce}">' in page.text
    assert nonce != re.search(r"'nonce-([A-Za-z0-9_-]+)'", http.get("/").headers["content-security-policy"]).group(1)
    assert page.headers["x-content-type-options"] == "nosniff" and "no-store" in page.headers["cache-control"]
    assert '<meta name="viewport"' in page.text and "http://" not in page.text.replace(bot.fake.base_url, "")
    html5_valid(page.text)
    for word in PRIVATE_WORDS:
        assert word not in page.text
    feed = wait_for(lambda: (f := http.get("/status.json").json())["queued"] and f, "the public job in the feed")
    assert [j["id"] for j in feed["queued"]] == [public] and feed["hidden"]["queued"] == 1
    assert http.get("/status.json").headers["x-content-type-options"] == "nosniff"

    denied = http.get("/operator")
    assert denied.status_code == 401 and denied.headers["www-authenticate"].startswith("Basic ")
    assert PRIVATE_REPO not in denied.text
    assert http.get("/operator", headers={"Authorization": "Bearer wrong-token-0123456789"}).status_code == 401
    operator = http.get("/operator/status.json", auth=("ops", TOKEN))
    assert operator.status_code == 200 and operator.headers["cache-control"] == "no-store, private"
    assert {j["repo"] for j in operator.json()["queued"]} == {REPO, PRIVATE_REPO}


def test_the_page_in_chromium_follows_a_running_job(served, tmp_path):
    bot, store = served
    running = store.submit(REPO, "ops/norm.py::scale_shift")
    store.start(running)
    store.progress(running, generation=1, evaluated=3, accepted=1, timed=True, elapsed_s=30.0)
    secret = store.submit(PRIVATE_REPO, PRIVATE_OP)
    store.start(secret)
    store.progress(secret, generation=2, evaluated=20, accepted=5, timed=True, best_speedup_vs_compile=2.5)
    store.submit(REPO, HOSTILE_OP, pr=2)
    done = store.submit(REPO, "ops/norm.py::finished_op", pr=4)
    store.start(done)
    store.finish(done, JobState.SUCCEEDED, check_run_id=501, follow_up_pr=77)
    url = f"http://127.0.0.1:{bot.port}"

    with chromium() as browser:
        # a phone: narrow, touch, high density
        context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True,
                                      has_touch=True)
        context.add_init_script("window.__csp = []; document.addEventListener('securitypolicyviolation', e =>"
                                " window.__csp.push([e.violatedDirective, e.blockedURI, e.lineNumber].join(' ')));")
        page = context.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        response = page.goto(url + "/", wait_until="load")
        assert response is not None and response.status == 200
        card = page.locator(f'li.job[data-job="{running}"]')
        card.wait_for(timeout=60_000)
        assert card.locator('[data-field="candidates"]').inner_text() == "3 / 32"
        page.evaluate("window.__loadedOnce = true")  # gone if the page were reloaded instead of refreshed

        store.progress(running, generation=2, evaluated=7, accepted=2, timed=True, best_speedup_vs_compile=1.42,
                       elapsed_s=60.0)
        page.wait_for_function(
            f"""() => {{ const c = document.querySelector('li.job[data-job="{running}"] [data-field="candidates"]');
                       return c && c.textContent.trim() === '7 / 32'; }}""", timeout=90_000)
        assert "1.42× vs torch.compile" in card.locator('[data-field="speedup"]').inner_text()
        assert page.evaluate("window.__loadedOnce") is True, "the page reloaded instead of refreshing in place"
        assert card.locator("progress").get_attribute("value") == "7"

        text = page.content()
        for word in PRIVATE_WORDS:
            assert word not in text, f"{word!r} shown to an anonymous visitor"
        assert page.locator('[data-field="hidden-running"]').inner_text() == "1"
        # the hostile op id is text, not markup
        hostile = page.locator("li.job", has_text="onerror")
        assert hostile.count() == 1 and page.locator("main img").count() == 0
        assert page.evaluate("window.pwned") is None and dialogs == []
        finished = page.locator(f'li.job[data-job="{done}"]')
        assert finished.locator("a", has_text="check run").get_attribute("href") == \
            f"{bot.fake.base_url}/{REPO}/runs/501"
        assert finished.locator("a", has_text="follow-up PR #77").get_attribute("href") == \
            f"{bot.fake.base_url}/{REPO}/pull/77"
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "wider than the phone"
        assert page.evaluate("window.__csp") == []

        shot = tmp_path / "status-phone.png"
        page.screenshot(path=str(shot), full_page=True)
        assert is_png(shot)
        context.close()

        # the operator, with the token as the Basic password, sees the private job and its refreshes too (and
        # the page in a dark theme)
        operator = browser.new_context(http_credentials={"username": "ops", "password": TOKEN}, color_scheme="dark")
        page = operator.new_page()
        assert page.goto(url + "/operator").status == 200
        secret_card = page.locator(f'li.job[data-job="{secret}"]')
        secret_card.wait_for(timeout=60_000)
        assert PRIVATE_OP in secret_card.inner_text() and "2.50× vs torch.compile" in secret_card.inner_text()
        store.progress(secret, generation=3, evaluated=25, accepted=6, timed=True, best_speedup_vs_compile=2.75)
        page.wait_for_function(
            f"""() => {{ const c = document.querySelector('li.job[data-job="{secret}"] [data-field="candidates"]');
                       return c && c.textContent.trim() === '25 / 32'; }}""", timeout=90_000)
        shot = tmp_path / "status-operator.png"
        page.screenshot(path=str(shot), full_page=True)
        assert is_png(shot)
        operator.close()


def test_a_pr_job_links_its_pr_check_run_and_follow_up(fake, redis_server, start_bot, pr):
    """A job the bot itself queued for ``/kernelevo optimize``: the feed links what the bot recorded."""
    from bot_harness import Scene, finish_like_a_gpu_worker, gpu_summary

    scene = Scene(fake, redis_server, start_bot(KERNELEVO_STATUS_PUBLIC_REPOS=REPO))
    assert scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo optimize")).status_code == 202
    (job,) = scene.wait_jobs(pr, 1)
    run_id = wait_for(lambda: scene.jobs.get(job.id).links.check_run_id, "the job to be linked to its check run")
    web = f"{fake.base_url}/{REPO}"

    def listed(section: str) -> dict | None:
        feed = scene.bot.http.get("/status.json").json()
        return next((j for j in feed[section] if j["id"] == job.id and j["links"]["check_run"]), None)

    queued = wait_for(lambda: listed("queued"), "the queued job with its check run in the feed", timeout=60)
    assert queued["links"]["pull_request"] == f"{web}/pull/{pr}"
    assert queued["links"]["check_run"] == f"{web}/runs/{run_id}"
    assert queued["op"] == "ops/norm.py::scale_shift" and queued["branch"] == "feature"

    finish_like_a_gpu_worker(scene.jobs, job.id, gpu_summary(job.spec.op_id))
    record = scene.wait_reported(job.id)
    finished = wait_for(lambda: (j := listed("finished")) and j["links"]["follow_up"] and j, "the follow-up link",
                        timeout=60)
    assert finished["state"] == "succeeded" and finished["stop_reason"] == "plateau"
    assert finished["links"]["follow_up"] == f"{web}/pull/{record.links.follow_up_pr}"
