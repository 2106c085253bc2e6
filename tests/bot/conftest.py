"""Fixtures of the bot tests; the processes and readers are in bot_harness.py."""

from __future__ import annotations

import pytest
from bot_harness import OP_V1, OP_V2, REPO, Bot, FakeGitHub, RedisServer, Scene, Worker
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


@pytest.fixture(scope="session")
def app_keys() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


@pytest.fixture
def fake(app_keys):
    with FakeGitHub(app_id=4242, public_key=app_keys[1]) as server:
        server.add_repo(REPO, {".github/kernelevo.yml": "max_open_prs: 2\n", "ops/norm.py": OP_V1,
                               "README.md": "models\n"})
        server.set_permission(REPO, "alice", "write")
        server.set_permission(REPO, "maya", "maintain")
        server.set_permission(REPO, "rita", "read")
        yield server


@pytest.fixture
def redis_server(tmp_path):
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.stop()


@pytest.fixture
def start_bot(fake, app_keys, redis_server, tmp_path):
    """``start_bot(device=...)`` starts ``kernelevo serve`` (web + bot worker); killed at teardown."""
    started: list[Bot] = []

    def start(device: str = "cuda", **env: str) -> Bot:
        bot = Bot(fake, app_keys[0], redis_server.url, tmp_path / f"bot{len(started)}", device=device, extra_env=env)
        started.append(bot)
        return bot.start()

    yield start
    for bot in started:
        bot.kill9()


@pytest.fixture
def scene(fake, redis_server, start_bot) -> Scene:
    """The fake GitHub, Redis and a running bot whose jobs go to the (absent) GPU workers."""
    return Scene(fake, redis_server, start_bot())


@pytest.fixture
def cpu_worker(redis_server, tmp_path):
    """A real ``kernelevo worker --device cpu`` on the test's Redis."""
    worker = Worker("cpu1", redis_server.url, tmp_path)
    worker.start()
    yield worker
    worker.stop()


@pytest.fixture
def pr(fake) -> int:
    """alice's PR (same repo) changing ``scale_shift``."""
    fake.push(REPO, "feature", {"ops/norm.py": OP_V2}, "change the op")
    return fake.open_pull(REPO, "feature", "main", "alice")["number"]
