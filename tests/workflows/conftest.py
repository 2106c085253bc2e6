"""Fixtures of the worker-tier tests (the processes themselves are in workflow_harness.py)."""

from __future__ import annotations

import pytest
from workflow_harness import RedisServer, Worker, make_repo, settings_for


@pytest.fixture
def redis_server(tmp_path):
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.stop()


@pytest.fixture
def jobs(redis_server):
    from workflows.client import JobsClient

    return JobsClient.from_settings(settings_for(redis_server.url))


@pytest.fixture(scope="session")
def worker_cache(tmp_path_factory):
    """One compile cache (Triton, torch extensions) for every worker of the session: later jobs start warm."""
    return tmp_path_factory.mktemp("worker-cache")


@pytest.fixture
def start_worker(tmp_path, worker_cache):
    """``start_worker(name, redis_url)`` starts a real CPU worker; every one is killed at teardown."""
    started: list[Worker] = []

    def start(name: str, redis_url: str, **env: str) -> Worker:
        worker = Worker(name, redis_url, tmp_path, env, cache=worker_cache)
        started.append(worker)
        return worker.start()

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path / "repo")
