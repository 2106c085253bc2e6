"""State survives restarts: ``kill -9`` of the web process and its bot worker, deliveries accepted before a crash,
duplicates, Redis down, approvals and pending requests, jobs that finished or vanished while the bot was down;
and a real search on a real CPU worker that the bot's restart does not disturb."""

from __future__ import annotations

import pytest
from bot_harness import OP_GELU, REPO, SCALE_ADD, Scene, finish_like_a_gpu_worker, gpu_summary, wait_for
from github_server import Fault

from workflows.dispatch import BOT_PUBLISH_TASK
from workflows.models import JobState, OriginKind


def test_a_job_that_finished_while_the_bot_was_down_is_published_once_after_restart(scene, fake, pr):
    scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo optimize"))
    (job,) = scene.wait_jobs(pr, 1)
    wait_for(lambda: scene.jobs.get(job.id).links.check_run_id, "the job to be linked")
    scene.bot.kill9()
    finish_like_a_gpu_worker(scene.jobs, job.id, gpu_summary(job.spec.op_id))  # its notification waits in Redis
    assert scene.job_runs()[0]["status"] != "completed"

    scene.bot.start()  # the queued notification and the start-up reconcile both try: one publish
    (run,) = scene.wait_run_completed()
    assert run["conclusion"] == "success"
    scene.wait_reported(job.id)
    scene.jobs.dispatcher.notify_bot(BOT_PUBLISH_TASK, job.id, OriginKind.PR)  # a redelivered notification
    scene.wait_status(pr, "(created)")
    wait_for(lambda: not scene.state.open_jobs(), "the job to leave the open jobs")
    assert len(fake.calls("POST", "/repos/{owner}/{repo}/pulls")) == 1 and len(scene.kernel_pulls()) == 1
    patches = fake.calls("PATCH", "/repos/{owner}/{repo}/check-runs")
    statuses = [p.request["status"] for p in patches]
    assert statuses.count("completed") == 1 and statuses[-1] == "completed"  # nothing written after the end


def test_the_check_run_of_a_job_that_vanished_fails_after_restart(scene, pr):
    scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo optimize"))
    (job,) = scene.wait_jobs(pr, 1)
    wait_for(lambda: scene.jobs.get(job.id).links.check_run_id, "the job to be linked")
    scene.bot.kill9()
    scene.jobs.store.client.delete(scene.jobs.store.keys.job(job.id))  # expired, or lost with Redis's data
    scene.bot.start()
    (run,) = scene.wait_run_completed()
    assert run["conclusion"] == "failure"
    assert f"job {job.id} no longer exists" in run["output"]["summary"]


def test_a_delivery_accepted_before_a_crash_is_handled_on_redelivery_and_duplicates_are_not(scene, fake, pr):
    rate_limit = Fault("POST", r"/reactions$", 403, {"Retry-After": "600"}, "secondary rate limit")
    fake.inject(rate_limit)
    payload = scene.comment(pr, "alice", "/kernelevo optimize")
    assert scene.send("issue_comment", payload, delivery="d-crash").status_code == 202
    key = scene.state.key("delivery", "d-crash")
    wait_for(lambda: rate_limit.times == 0, "the handler to reach GitHub (and be deferred for 600 s)")
    assert scene.state.client.get(key).startswith(b"handling:")
    scene.bot.kill9()  # accepted, not handled
    assert scene.jobs.list() == []

    scene.bot.start()
    # GitHub's redelivery keeps the id; the dead process's lease lapses, then the delivery is handled
    wait_for(lambda: scene.send("issue_comment", payload, delivery="d-crash").status_code == 202,
             "the redelivery to be accepted", interval=0.5)
    (job,) = scene.wait_jobs(pr, 1)
    assert scene.reactions(payload["comment"]["id"]) == ["+1"]
    wait_for(lambda: scene.state.client.get(key) == b"done", "the delivery to be marked handled")
    again = scene.send("issue_comment", payload, delivery="d-crash")
    assert again.status_code == 200 and "duplicate" in again.json()["status"]

    # two copies of one delivery at once: the second is refused while the first is handled, or after it
    twin = scene.comment(pr, "alice", "/kernelevo status")
    first, second = (scene.send("issue_comment", twin, delivery="d-twin") for _ in range(2))
    assert first.status_code == 202 and second.status_code in (200, 409)
    wait_for(lambda: scene.state.client.get(scene.state.key("delivery", "d-twin")) == b"done", "the twin handled")
    assert scene.reactions(twin["comment"]["id"]) == ["+1"] and len(scene.jobs.list()) == 1


def test_redis_down_makes_healthz_fail_and_webhooks_503(scene, redis_server, pr):
    assert scene.bot.http.get("/healthz").json()["status"] == "ok"
    redis_server.stop()
    health = scene.bot.http.get("/healthz")
    assert health.status_code == 503 and "Redis is unreachable" in health.json()["error"]
    response = scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo optimize"))
    assert response.status_code == 503 and "redeliver" in response.json()["error"]


def test_approvals_and_pending_requests_survive_restarts(scene, fake):
    fake.fork(REPO, "mallory/models")
    fake.push("mallory/models", "speedup", {"ops/gelu.py": OP_GELU}, "add op")
    number = fake.open_pull(REPO, "speedup", "main", "mallory", head_repo="mallory/models")["number"]
    scene.send("issue_comment", scene.comment(number, "mallory", "/kernelevo optimize"))
    scene.wait_status(number, "comes from a fork")

    scene.bot.kill9()
    scene.bot.start()
    scene.approve(number, "maya")
    (job,) = scene.wait_jobs(number, 1)  # the request that waited across the restart
    assert job.spec.origin.requested_by == "mallory"

    scene.bot.kill9()
    scene.bot.start()
    scene.send("issue_comment", scene.comment(number, "mallory", "/kernelevo optimize"))
    scene.wait_status(number, "Already requested for this commit")  # the approval held: no "comes from a fork"
    assert len(scene.jobs.list()) == 1


@pytest.mark.slow
def test_kill9_of_the_bot_mid_search_on_a_cpu_worker_still_ends_the_check_run(fake, redis_server, start_bot,
                                                                              cpu_worker):
    """A real search (offline proposer, the verifier, Triton's interpreter) on `kernelevo worker --device cpu`;
    the web process and the bot worker are killed while it runs and started again."""
    fake.push(REPO, "main", {".github/kernelevo.yml": "budgets:\n  candidates: 2\nmax_open_prs: 2\n"}, "tiny budget")
    fake.push(REPO, "task", {"tasks/scale_add.py": SCALE_ADD}, "add a task")
    number = fake.open_pull(REPO, "task", "main", "alice")["number"]
    scene = Scene(fake, redis_server, start_bot(device="cpu"))
    scene.send("issue_comment", scene.comment(number, "alice", "/kernelevo optimize --backend triton"))
    (job,) = scene.wait_jobs(number, 1)
    assert job.spec.device == "cpu" and job.spec.budgets.candidates == 2 and job.spec.proposer == "offline"
    wait_for(lambda: scene.jobs.get(job.id).state is JobState.RUNNING, "the search to start", timeout=300)
    scene.bot.kill9()

    done = wait_for(lambda: (r := scene.jobs.get(job.id)).state.terminal and r, "the search to end", timeout=900)
    assert done.state is JobState.SUCCEEDED, done.error
    assert done.result.verdict["verdict"] == "accepted" and not done.published
    assert scene.job_runs()[0]["status"] != "completed"  # nobody reported it yet

    scene.bot.start()
    (run,) = scene.wait_run_completed()
    assert run["conclusion"] == "neutral"  # verified on CPU, not timed: no speed claim, no PR
    assert "verified but not timed (no GPU)" in run["output"]["summary"]
    scene.wait_reported(job.id)
    assert scene.kernel_pulls() == [] and "| succeeded |" in scene.wait_status(number, "not timed")
