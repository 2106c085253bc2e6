"""Fixtures of the bot tests; the harness itself is in bot_harness.py."""

from __future__ import annotations

import pytest
from bot_harness import OP_V1, OP_V2, REPO, FakeGitHub, Harness
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
def harness(fake, app_keys, tmp_path):
    h = Harness(fake, app_keys[0], tmp_path)
    yield h
    h.close()


@pytest.fixture
def pr(fake) -> int:
    """alice's PR (same repo) changing ``scale_shift``."""
    fake.push(REPO, "feature", {"ops/norm.py": OP_V2}, "change the op")
    return fake.open_pull(REPO, "feature", "main", "alice")["number"]
