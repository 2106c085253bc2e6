"""The webhook endpoint: signatures, replays, routing, refusing bad configuration, installations; the checkout."""

from __future__ import annotations

import json

import pytest
from bot_harness import INSTALLATION, REPO, SECRET, settings_for, wait_for

from bot.service import ConfigurationError, build, missing_settings
from kernelevo.settings import Settings


def test_unsigned_and_badly_signed_deliveries_are_rejected(scene, pr):
    payload = scene.comment(pr, "alice", "/kernelevo optimize")
    assert scene.send("issue_comment", payload, sign=False).status_code == 401
    assert scene.send("issue_comment", payload, secret="wrong-secret").status_code == 401
    body = json.dumps(payload).encode()
    from bot.signature import sign

    tampered = scene.bot.http.post("/webhook", content=body + b" ", headers={
        "X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": "d-1", "X-Hub-Signature-256": sign(SECRET, body)})
    assert tampered.status_code == 401
    assert scene.state.client.get(scene.state.key("delivery", "d-1")) is None  # never claimed
    assert scene.reactions(payload["comment"]["id"]) == [] and scene.jobs.list() == []


def test_replayed_delivery_is_processed_once(scene, pr):
    payload = scene.comment(pr, "alice", "/kernelevo optimize")
    assert scene.send("issue_comment", payload, delivery="delivery-42").status_code == 202
    scene.wait_jobs(pr, 1)
    wait_for(lambda: scene.state.client.get(scene.state.key("delivery", "delivery-42")) == b"done", "handled")
    again = scene.send("issue_comment", payload, delivery="delivery-42")
    assert again.status_code == 200 and "duplicate" in again.json()["status"]
    assert len(scene.jobs.list()) == 1 and scene.reactions(payload["comment"]["id"]) == ["+1"]


def test_ping_health_unrouted_and_uninstalled_events(scene, pr):
    assert scene.send("ping", {"zen": "Keep it logically awesome.", "hook_id": 1}).json() == {"status": "pong"}
    assert scene.bot.http.get("/healthz").json()["status"] == "ok"
    ignored = scene.send("star", {"action": "created", "repository": {"full_name": REPO}})
    assert ignored.status_code == 200 and ignored.json()["status"] == "ignored"
    payload = scene.comment(pr, "alice", "/kernelevo optimize")
    del payload["installation"]
    response = scene.send("issue_comment", payload)
    assert response.status_code == 400 and "install" in response.json()["error"]


def test_malformed_requests(scene):
    from bot.signature import sign

    body = b"not json"
    headers = {"X-Hub-Signature-256": sign(SECRET, body), "X-GitHub-Delivery": "x1"}
    assert scene.bot.http.post("/webhook", content=body, headers=headers).status_code == 400  # no event header
    headers["X-GitHub-Event"] = "issue_comment"
    assert scene.bot.http.post("/webhook", content=body, headers=headers).status_code == 400  # not JSON


def test_installation_events_keep_the_repo_map_and_removal_forgets_everything(scene, pr):
    payload = scene._base("installation_deleted.json")
    payload["action"] = "created"
    payload["repositories"] = [{"full_name": REPO}, {"full_name": "acme/other"}, {"full_name": "bad name"}]
    scene.send("installation", payload)
    wait_for(lambda: scene.state.installations() == {REPO: INSTALLATION, "acme/other": INSTALLATION},
             "the installation's repositories to be recorded")
    removed = scene._base("installation_deleted.json")
    scene.send("installation", removed)
    wait_for(lambda: scene.state.installations() == {}, "the removed installation's repositories to be dropped")


def test_handler_makes_no_github_calls_inside_the_request(redis_server, fake, app_keys, pr):
    settings = Settings(**{**settings_for(redis_server.url).model_dump(), "webhook_secret": "s3cret",
                           "github_app_id": fake.app_id, "github_private_key": app_keys[0],
                           "github_api_url": fake.base_url, "bot_workers": 1})
    asgi, ctx = build(settings)
    ctx.work.stop()  # nothing can run the queued work
    from starlette.testclient import TestClient

    from bot.signature import sign

    comment = {"id": 1, "body": "/kernelevo help", "user": {"login": "alice"}}
    body = json.dumps({"action": "created", "issue": {"number": pr, "pull_request": {}}, "comment": comment,
                       "installation": {"id": INSTALLATION}, "repository": {"full_name": REPO}}).encode()
    before = len(fake.exchanges)
    headers = {"X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": "n-1", "X-Hub-Signature-256": sign("s3cret",
                                                                                                           body)}
    with TestClient(asgi) as client:
        assert client.post("/webhook", content=body, headers=headers).status_code == 202
        assert client.post("/webhook", content=body, headers=headers).status_code == 409  # still being handled
    assert len(fake.exchanges) == before and fake.token_requests == []
    assert ctx.github(5).get_repo(REPO)["full_name"] == REPO  # real token exchange against the fake


def test_service_refuses_to_start_and_names_every_missing_setting(tmp_path):
    settings = Settings(_env_file=None)
    missing = missing_settings(settings)
    assert len(missing) == 3
    assert any("KERNELEVO_WEBHOOK_SECRET" in m for m in missing)
    assert any("KERNELEVO_GITHUB_APP_ID" in m for m in missing)
    assert any("KERNELEVO_GITHUB_PRIVATE_KEY" in m for m in missing)
    with pytest.raises(ConfigurationError) as error:
        build(settings)
    assert all(m in str(error.value) for m in missing)
    bad_path = Settings(webhook_secret="s", github_app_id=1, github_private_key_path=tmp_path / "nope.pem")
    assert any("not a file" in m for m in missing_settings(bad_path))


def test_service_reports_unreachable_redis_and_a_bad_device(app_keys):
    settings = Settings(webhook_secret="s", github_app_id=1, github_private_key=app_keys[0],
                        redis_url="redis://127.0.0.1:1/0")
    with pytest.raises(ConfigurationError, match="cannot reach Redis"):
        build(settings)
    with pytest.raises(ConfigurationError, match="--device must be one of cuda, cpu"):
        build(settings, device="tpu")


def test_serve_command_exits_with_the_list(monkeypatch):
    import typer
    from typer.testing import CliRunner

    from kernelevo.commands import serve_cmd
    from kernelevo.settings import reset_settings_cache

    for name in ("KERNELEVO_WEBHOOK_SECRET", "KERNELEVO_GITHUB_APP_ID", "KERNELEVO_GITHUB_PRIVATE_KEY",
                 "KERNELEVO_GITHUB_PRIVATE_KEY_PATH"):
        monkeypatch.delenv(name, raising=False)
    reset_settings_cache()
    app = typer.Typer()
    serve_cmd.register(app)
    for command in (["serve"], ["bot-worker"]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2, result.output
        assert "KERNELEVO_WEBHOOK_SECRET" in result.output and "KERNELEVO_GITHUB_APP_ID" in result.output
    reset_settings_cache()


def test_bot_worker_plan():
    from bot.worker import plan_bot_worker

    plan = plan_bot_worker(hostname="h", pid=12, concurrency=4)
    assert plan.node == "bot-12@h"
    assert plan.argv[:3] == ["worker", "--queues", "bot"] and "threads" in plan.argv and "4" in plan.argv


def test_tarball_workspace_checks_out_a_commit(fake, app_keys, pr):
    from bot.auth import InstallationTokens
    from bot.github_api import token_exchange
    from bot.workspace import tarball_workspace

    tokens = InstallationTokens(fake.app_id, app_keys[0], token_exchange(fake.base_url))
    provider = tarball_workspace(fake.base_url, tokens.get)
    sha = fake.pulls[REPO][pr]["head"]["sha"]
    with provider(INSTALLATION, REPO, sha) as root:
        files = {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*") if p.is_file()}
    assert files == fake.files_at(REPO, sha)
    assert not root.exists()  # removed afterwards


def test_tarball_extraction_refuses_paths_outside_the_checkout(tmp_path):
    import io
    import tarfile

    from bot.workspace import CheckoutError, extract

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("../escaped.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(CheckoutError, match="'../escaped.txt' climbs out of the tree"):
        extract(buffer.getvalue(), tmp_path / "dest")
    assert not (tmp_path / "escaped.txt").exists()
