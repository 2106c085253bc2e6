"""How workers are configured (pure): device pinning, queues, node names, credentials, Celery and timing rules."""

import subprocess
import sys

import pytest
from workflow_harness import ROOT

from kernelevo.settings import Settings
from workflows.celery_app import celery_config, check_timings
from workflows.redis_conn import redact_url
from workflows.worker import github_credentials, plan_worker


def plan(**kwargs):
    base = dict(gpu=None, device=None, queues=None, name=None, hostname="box", pid=42)
    return plan_worker(**{**base, **kwargs})


def test_a_gpu_worker_is_pinned_to_its_gpu_and_runs_one_chunk_per_fresh_child():
    p = plan(gpu=3)
    assert p.env == {"KERNELEVO_WORKER_DEVICE": "cuda", "CUDA_VISIBLE_DEVICES": "3"}
    assert p.node == "gpu3@box" and p.queues == ["gpu"]
    argv = " ".join(p.argv)
    for flag in ("--concurrency 1", "--max-tasks-per-child 1", "--prefetch-multiplier 1", "--pool prefork",
                 "--hostname gpu3@box", "--queues gpu"):
        assert flag in argv


def test_a_cpu_worker_sees_no_gpu_and_gets_a_unique_name():
    p = plan(device="cpu", queues="cpu,bot")
    assert p.env["CUDA_VISIBLE_DEVICES"] == "" and p.env["KERNELEVO_WORKER_DEVICE"] == "cpu"
    assert p.node == "cpu-42@box" and p.queues == ["cpu", "bot"]
    assert plan(device="cpu", name="w7").node == "w7@box"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({}, "--gpu N (one worker per GPU) or --device cpu"),
    ({"device": "cuda"}, "--gpu N"),
    ({"gpu": 0, "device": "cpu"}, "not both"),
    ({"device": "tpu"}, "--device must be cpu"),
    ({"gpu": -1}, "GPU index"),
    ({"device": "cpu", "queues": "cpu,nope"}, "unknown queue(s) nope"),
    ({"device": "cpu", "name": "bad name"}, "--name"),
])
def test_bad_worker_options_say_what_to_do(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        plan(**kwargs)


def test_github_credentials_are_recognised_for_dropping():
    env = {"KERNELEVO_GITHUB_PRIVATE_KEY": "k", "KERNELEVO_GITHUB_PRIVATE_KEY_PATH": "/k", "GITHUB_TOKEN": "t",
           "GH_TOKEN": "t", "KERNELEVO_WEBHOOK_SECRET": "s", "KERNELEVO_GITHUB_APP_ID": "1",
           "KERNELEVO_LLM_API_KEY": "llm", "KERNELEVO_REDIS_URL": "redis://"}
    assert github_credentials(env) == ["GH_TOKEN", "GITHUB_TOKEN", "KERNELEVO_GITHUB_PRIVATE_KEY",
                                       "KERNELEVO_GITHUB_PRIVATE_KEY_PATH", "KERNELEVO_WEBHOOK_SECRET"]


def test_redis_urls_are_logged_without_their_password():
    assert redact_url("redis://:hunter2@cache:6380/1") == "redis://:***@cache:6380/1"
    assert redact_url("rediss://app:hunter2@[::1]/0") == "rediss://app:***@[::1]/0"
    assert redact_url("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"


def test_celery_is_configured_for_late_acks_and_a_visibility_timeout_above_the_chunk():
    settings = Settings()
    config = celery_config(settings)
    assert config["task_acks_late"] and config["task_reject_on_worker_lost"]
    assert config["worker_max_tasks_per_child"] == 1 and config["worker_prefetch_multiplier"] == 1
    visibility = config["broker_transport_options"]["visibility_timeout"]
    assert visibility > settings.queue_chunk_s + settings.eval_timeout_s
    assert config["task_time_limit"] < visibility
    assert {q.name for q in config["task_queues"]} == {"gpu", "cpu", "bot"}
    check_timings(settings)


@pytest.mark.parametrize(("changes", "message"), [
    ({"queue_chunk_s": 3600.0}, "VISIBILITY_TIMEOUT_S"),
    ({"queue_heartbeat_s": 40.0}, "HEARTBEAT_TTL_S"),
])
def test_timings_that_would_break_recovery_are_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        check_timings(Settings(**changes))


def test_the_worker_parent_imports_no_torch():
    """The Celery parent forks every chunk; it must hold no CUDA context, so it must not even import torch."""
    code = ("import sys, workflows.celery_app, workflows.tasks, workflows.client, workflows.reaper;"
            "print(sorted(m for m in ('torch', 'triton', 'evaluator.session') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"
