"""The webhook endpoint: signatures, replays, routing to the work queue, refusing bad configuration."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time

import pytest
from bot_harness import REPO, SECRET

from bot.deliveries import RedisDeliveryStore
from bot.service import ConfigurationError, build, missing_settings
from kernelevo.settings import Settings


def test_unsigned_and_badly_signed_deliveries_are_rejected(harness, pr):
    payload = harness.comment(pr, "alice", "/kernelevo optimize")
    assert harness.send("issue_comment", payload, sign=False).status_code == 401
    assert harness.send("issue_comment", payload, secret="wrong-secret").status_code == 401
    body = json.dumps(payload).encode()
    tampered = harness.http.post("/webhook", content=body + b" ", headers={
        "X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": "d-1",
        "X-Hub-Signature-256": __import__("bot.signature").signature.sign(SECRET, body)})
    assert tampered.status_code == 401
    harness.settle()
    assert harness.search.calls == [] and harness.reactions(payload["comment"]["id"]) == []


def test_replayed_delivery_is_processed_once(harness, fake, pr):
    payload = harness.comment(pr, "alice", "/kernelevo optimize")
    first = harness.send("issue_comment", payload, delivery="delivery-42")
    again = harness.send("issue_comment", payload, delivery="delivery-42")
    assert first.status_code == 202
    assert again.status_code == 200 and "duplicate" in again.json()["status"]
    harness.settle()
    assert len(harness.search.calls) == 1 and harness.reactions(payload["comment"]["id"]) == ["+1"]


def test_ping_health_and_unrouted_events(harness):
    assert harness.send("ping", {"zen": "Keep it logically awesome.", "hook_id": 1}).json() == {"status": "pong"}
    assert harness.http.get("/healthz").json()["status"] == "ok"
    ignored = harness.send("star", {"action": "created", "repository": {"full_name": REPO}})
    assert ignored.status_code == 200 and ignored.json()["status"] == "ignored"


def test_events_without_an_installation_are_refused(harness, pr):
    payload = harness.comment(pr, "alice", "/kernelevo optimize")
    del payload["installation"]
    response = harness.send("issue_comment", payload)
    assert response.status_code == 400 and "install" in response.json()["error"]


def test_malformed_requests(harness):
    body = b"not json"
    from bot.signature import sign

    headers = {"X-Hub-Signature-256": sign(SECRET, body), "X-GitHub-Delivery": "x1"}
    assert harness.http.post("/webhook", content=body, headers=headers).status_code == 400  # no event header
    headers["X-GitHub-Event"] = "issue_comment"
    assert harness.http.post("/webhook", content=body, headers=headers).status_code == 400  # not JSON


def test_handler_does_no_github_calls_inside_the_request(harness, fake, pr):
    harness.search.release.clear()
    before = len(fake.exchanges)
    harness.work.stop()  # nothing can run the queued work
    response = harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo optimize"))
    assert response.status_code == 202
    assert len(fake.exchanges) == before
    harness.search.release.set()


def test_installation_removed_forgets_its_token(harness, fake, pr):
    harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo status"))
    harness.settle()
    assert fake.token_requests == [77]
    payload = harness._base("installation_deleted.json")
    harness.send("installation", payload)
    harness.settle()
    harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo status"))
    harness.settle()
    assert fake.token_requests == [77, 77]


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
    app.command("noop")(lambda: None)
    result = CliRunner().invoke(app, ["serve"])
    reset_settings_cache()
    assert result.exit_code == 2
    assert "KERNELEVO_WEBHOOK_SECRET" in result.output and "KERNELEVO_GITHUB_APP_ID" in result.output


def test_build_wires_a_working_app(app_keys, fake, tmp_path):
    settings = Settings(webhook_secret="s3cret", github_app_id=fake.app_id, github_private_key=app_keys[0],
                        github_api_url=fake.base_url, bot_delivery_store="memory", bot_workers=1)
    asgi, ctx = build(settings, workspace_provider=lambda repo, sha: None)
    from starlette.testclient import TestClient

    with TestClient(asgi) as client:
        assert client.post("/webhook", content=b"{}").status_code == 401
        assert client.get("/healthz").status_code == 200
    assert ctx.github(5).get_repo(REPO)["full_name"] == REPO  # real token exchange against the fake
    ctx.work.stop()


@pytest.fixture
def redis_server(tmp_path):
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install -y redis-server)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(tmp_path)], stdout=subprocess.DEVNULL)
    import redis

    client = redis.Redis(port=port)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
    yield client
    proc.terminate()
    proc.wait(10)


def test_redis_delivery_store_dedupes_across_instances_with_a_ttl(redis_server):
    import redis

    other = redis.Redis(port=redis_server.connection_pool.connection_kwargs["port"])
    first, second = RedisDeliveryStore(redis_server, ttl_s=1), RedisDeliveryStore(other, ttl_s=1)
    assert first.first_time("abc") and not second.first_time("abc") and second.first_time("def")
    assert 0 < redis_server.ttl("kernelevo:delivery:abc") <= 1
    time.sleep(1.2)
    assert second.first_time("abc")  # expired


def test_service_with_real_redis_rejects_a_replay(redis_server, app_keys, fake):
    port = redis_server.connection_pool.connection_kwargs["port"]
    settings = Settings(webhook_secret="s3cret", github_app_id=fake.app_id, github_private_key=app_keys[0],
                        github_api_url=fake.base_url, redis_url=f"redis://127.0.0.1:{port}/0", bot_workers=1)
    asgi, ctx = build(settings, workspace_provider=lambda repo, sha: None)
    from starlette.testclient import TestClient

    from bot.signature import sign

    body = json.dumps({"zen": "hi"}).encode()
    headers = {"X-GitHub-Event": "ping", "X-GitHub-Delivery": "r-1", "X-Hub-Signature-256": sign("s3cret", body)}
    with TestClient(asgi) as client:
        assert client.post("/webhook", content=body, headers=headers).json() == {"status": "pong"}
        assert "duplicate" in client.post("/webhook", content=body, headers=headers).json()["status"]
    ctx.work.stop()


def test_service_reports_unreachable_redis(app_keys):
    settings = Settings(webhook_secret="s", github_app_id=1, github_private_key=app_keys[0],
                        redis_url="redis://127.0.0.1:1/0")
    with pytest.raises(ConfigurationError, match="cannot reach Redis"):
        build(settings, workspace_provider=lambda repo, sha: None)


def test_tarball_workspace_checks_out_a_commit(fake, app_keys, pr):
    from bot.auth import InstallationTokens
    from bot.github_api import token_exchange
    from bot.workspace import tarball_workspace

    tokens = InstallationTokens(fake.app_id, app_keys[0], token_exchange(fake.base_url))
    provider = tarball_workspace(fake.base_url, lambda repo: tokens.get(77))
    sha = fake.pulls[REPO][pr]["head"]["sha"]
    with provider(REPO, sha) as root:
        files = {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*") if p.is_file()}
    assert files == fake.files_at(REPO, sha)
    assert not root.exists()  # removed afterwards


def test_tarball_extraction_refuses_paths_outside_the_checkout(tmp_path):
    import io
    import tarfile

    from bot.workspace import extract

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("../escaped.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(tarfile.TarError):
        extract(buffer.getvalue(), tmp_path / "dest")
    assert not (tmp_path / "escaped.txt").exists()
