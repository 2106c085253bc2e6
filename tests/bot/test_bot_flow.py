"""End-to-end: signed webhooks into `kernelevo serve`, jobs through Redis and Celery, results published by the
bot-queue worker with PyGithub against the fake GitHub. The GPU worker is played through the job store's own
API (a timed result needs a GPU); tests/bot/test_bot_restart.py runs real CPU search workers."""

from __future__ import annotations

import json

from bot_harness import OP_GELU, OP_V2, REPO, finish_like_a_gpu_worker, gpu_summary, wait_for
from github_server import Fault

from workflows.models import JobState


def test_optimize_opens_follow_up_pr_and_rerun_updates_it(scene, fake, pr):
    payload = scene.comment(pr, "alice", "Looks good.\n\n/kernelevo optimize --budget 50000\nthanks")
    assert scene.send("issue_comment", payload).status_code == 202
    (job,) = scene.wait_jobs(pr, 1)
    assert scene.reactions(payload["comment"]["id"]) == ["+1"]
    assert job.spec.op_id == "ops/norm.py::scale_shift" and job.spec.commit_sha == fake.pulls[REPO][pr]["head"]["sha"]
    assert job.spec.origin.pr_number == pr and job.spec.origin.base_ref == "feature"
    wait_for(lambda: scene.jobs.get(job.id).links.check_run_id, "the job to be linked to its check run")
    (run,) = scene.job_runs()
    assert run["status"] == "queued" and run["name"] == "kernelevo: optimize (1 op)"

    finish_like_a_gpu_worker(scene.jobs, job.id, gpu_summary(job.spec.op_id))
    (run,) = scene.wait_run_completed()
    assert run["conclusion"] == "success" and run["output"]["title"] == "Published a faster kernel"
    assert any(o["title"] == "Searching" for o in run["_output_history"])  # the chunk's start moved it on
    record = scene.wait_reported(job.id)
    (follow_up,) = scene.kernel_pulls()
    assert record.links.follow_up_pr == follow_up["number"] and record.links.check_run_id == run["id"]
    assert follow_up["head"]["ref"] == "kernelevo/scale-shift/feature" and follow_up["base"]["ref"] == "feature"
    files = fake.files_at(REPO, "kernelevo/scale-shift/feature")
    kernel_dir = "kernels/scale_shift"
    assert {f"{kernel_dir}/kernel.py", f"{kernel_dir}/manifest.json", f"{kernel_dir}/test_scale_shift.py",
            f"{kernel_dir}/report.md"} <= set(files)
    assert files["ops/norm.py"] == OP_V2  # built on top of the PR head
    assert json.loads(files[f"{kernel_dir}/manifest.json"])["op_id"] == "ops/norm.py::scale_shift"
    report = files[f"{kernel_dir}/report.md"]
    assert "1.50x" in report and "NVIDIA H200" in report and "--budget-tokens 50000" in report
    # the speedup plot is committed byte for byte and shown in the PR body by its blob address
    png = fake.blobs_at(REPO, "kernelevo/scale-shift/feature")[f"{kernel_dir}/plots/speedup.png"]
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and "(plots/speedup.png)" in report
    url = f"https://github.com/{REPO}/blob/kernelevo/scale-shift/feature/{kernel_dir}/plots/speedup.png?raw=true"
    assert f"]({url})" in follow_up["body"]
    # no run in the job store (this worker mirrored none): the report says it has no per-candidate records
    assert f"{kernel_dir}/plots/lineage.png" not in files
    assert run["output"]["summary"].startswith(f"- `ops/norm.py::scale_shift`: #{follow_up['number']} (created)")
    assert "## KernelEvo: `ops/norm.py::scale_shift`" in run["output"]["summary"] and f"]({url})" in run[
        "output"]["summary"]
    status = scene.wait_status(pr, f"#{follow_up['number']} (created)")
    assert "| succeeded |" in status and job.id in status

    # a new push and a new request: the same follow-up PR is force-updated, not a second one
    first_commit = fake.refs[REPO]["kernelevo/scale-shift/feature"]
    fake.push(REPO, "feature", {"README.md": "models v2\n"}, "docs")
    scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo optimize"))
    second = wait_for(lambda: [j for j in scene.pr_jobs(pr) if j.id != job.id], "the second job")[0]
    finish_like_a_gpu_worker(scene.jobs, second.id, gpu_summary(second.spec.op_id, version=2))
    scene.wait_run_completed(2)
    scene.wait_reported(second.id)
    assert len(scene.kernel_pulls()) == 1
    assert fake.refs[REPO]["kernelevo/scale-shift/feature"] != first_commit
    files = fake.files_at(REPO, "kernelevo/scale-shift/feature")
    assert "kernel version 2" in files[f"{kernel_dir}/kernel.py"] and files["README.md"] == "models v2\n"
    scene.wait_status(pr, "(updated)")
    assert len(scene.bot_comments(pr)) == 1  # one comment, edited in place


def test_one_request_for_several_ops_shows_one_line_per_op(scene, fake):
    fake.push(REPO, "two", {"ops/norm.py": OP_V2, "ops/gelu.py": OP_GELU}, "two ops")
    number = fake.open_pull(REPO, "two", "main", "alice")["number"]
    scene.send("issue_comment", scene.comment(number, "alice", "/kernelevo optimize"))
    jobs = {j.spec.op_id: j for j in scene.wait_jobs(number, 2)}
    assert set(jobs) == {"ops/norm.py::scale_shift", "ops/gelu.py::fast_gelu"}
    (run,) = scene.job_runs()
    assert run["name"] == "kernelevo: optimize (2 ops)"

    finish_like_a_gpu_worker(scene.jobs, jobs["ops/gelu.py::fast_gelu"].id, gpu_summary("ops/gelu.py::fast_gelu"))
    scene.wait_reported(jobs["ops/gelu.py::fast_gelu"].id)
    assert scene.job_runs()[0]["status"] != "completed"  # one op is still out
    finish_like_a_gpu_worker(scene.jobs, jobs["ops/norm.py::scale_shift"].id,
                             gpu_summary("ops/norm.py::scale_shift", speedup=1.01), state="no_improvement")
    (run,) = scene.wait_run_completed()
    assert run["conclusion"] == "success"
    lines, _, reports = run["output"]["summary"].partition("\n\n")
    lines = lines.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("- `ops/gelu.py::fast_gelu`: #") or lines[1].startswith("- `ops/gelu.py::fast_gelu`: #")
    assert any("`ops/norm.py::scale_shift`: no PR: nothing beats eager" in line for line in lines)
    # under the lines, the report of the one published op only
    assert reports.startswith("## KernelEvo: `ops/gelu.py::fast_gelu`") and "## KernelEvo: `ops/norm.py" not in reports
    status = scene.wait_status(number, "no_improvement")
    assert status.count("| job-") == 2 and len(scene.kernel_pulls()) == 1


def test_non_collaborator_cannot_start_jobs(scene, pr):
    eve = scene.comment(pr, "eve", "/kernelevo optimize")
    scene.send("issue_comment", eve)
    rita = scene.approve(pr, "rita")
    wait_for(lambda: scene.reactions(eve["comment"]["id"]) == ["-1"] and scene.reactions(rita["comment"]["id"])
             == ["-1"], "one reaction each")
    assert scene.bot_comments(pr) == []  # untrusted commenters get a reaction, nothing written on the PR
    assert scene.pr_jobs(pr) == [] and scene.jobs.list() == []


def test_bots_edits_and_issue_comments_are_ignored(scene, fake, pr):
    bot = scene.comment(pr, "ci-helper[bot]", "/kernelevo optimize", kind="Bot")
    own = scene.comment(pr, "kernelevo[bot]", "/kernelevo optimize", kind="Bot")
    edited = scene.comment(pr, "alice", "/kernelevo optimize", action="edited")
    on_issue = scene.comment(pr, "alice", "/kernelevo optimize")
    del on_issue["issue"]["pull_request"]
    deliveries = []
    for payload in (bot, own, edited, on_issue):
        response = scene.send("issue_comment", payload, delivery=f"ignored-{len(deliveries)}")
        assert response.status_code in (200, 202)
        deliveries.append(f"ignored-{len(deliveries)}")
    wait_for(lambda: all(scene.state.claim_delivery(d, "probe", 1).value == "done" for d in deliveries),
             "the deliveries to be handled")
    assert scene.jobs.list() == [] and not any("kernelevo:status" in c["body"] for c in scene.bot_comments(pr))
    assert all(scene.reactions(p["comment"]["id"]) == [] for p in (bot, own, edited, on_issue))


def test_malformed_commands_get_a_helpful_reply(scene, pr):
    payload = scene.comment(pr, "alice", "/kernelevo optimise")
    scene.send("issue_comment", payload)
    status = scene.wait_status(pr, "did you mean `/kernelevo optimize`")
    assert scene.reactions(payload["comment"]["id"]) == ["confused"] and "/kernelevo status" in status
    scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo optimize --backend metal"))
    scene.wait_status(pr, "--backend must be one of triton, cuda, any")
    assert scene.jobs.list() == []


def test_unknown_op_lists_the_known_ones(scene, pr):
    scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo optimize scale_shfit"))
    status = scene.wait_status(pr, "`scale_shfit` (did you mean `scale_shift`?)")
    assert "ops/norm.py::scale_shift" in status and scene.jobs.list() == []


def test_fork_pr_needs_approval_bound_to_head_sha(scene, fake):
    fake.fork(REPO, "mallory/models")
    fake.push("mallory/models", "speedup", {"ops/gelu.py": OP_GELU}, "add op")
    number = fake.open_pull(REPO, "speedup", "main", "mallory", head_repo="mallory/models")["number"]

    scene.send("issue_comment", scene.comment(number, "mallory", "/kernelevo optimize"))
    scene.wait_status(number, "comes from a fork")
    rita = scene.approve(number, "rita")  # not a maintainer: one reaction, nothing else
    wait_for(lambda: scene.reactions(rita["comment"]["id"]) == ["-1"], "rita's comment to be refused")
    assert scene.jobs.list() == [] and "Approved" not in scene.status_text(number)

    scene.approve(number, "maya")  # the waiting request runs
    (job,) = scene.wait_jobs(number, 1)
    assert job.spec.op_id == "ops/gelu.py::fast_gelu" and job.spec.origin.requested_by == "mallory"
    assert job.spec.origin.base_ref == "main"  # a fork's follow-up targets the base branch
    finish_like_a_gpu_worker(scene.jobs, job.id, gpu_summary(job.spec.op_id))
    scene.wait_reported(job.id)
    (follow_up,) = scene.kernel_pulls()
    assert follow_up["base"]["ref"] == "main" and follow_up["head"]["ref"] == "kernelevo/fast-gelu/main"
    assert "comes from a fork" in follow_up["body"]

    # a new push voids the approval
    fake.push("mallory/models", "speedup", {"ops/gelu.py": OP_GELU + "\n# more\n"}, "tweak")
    scene.send("pull_request", scene.pull_event("synchronize", number))
    scene.send("issue_comment", scene.comment(number, "mallory", "/kernelevo optimize"))
    scene.wait_status(number, "older commit")
    assert len(scene.jobs.list()) == 1


def test_no_speedup_beyond_noise_opens_nothing(scene, pr):
    scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo optimize"))
    (job,) = scene.wait_jobs(pr, 1)
    finish_like_a_gpu_worker(scene.jobs, job.id, gpu_summary(job.spec.op_id, speedup=1.10, spread=0.2))
    (run,) = scene.wait_run_completed()
    assert run["conclusion"] == "neutral" and scene.kernel_pulls() == []
    scene.wait_status(pr, "within the timing spread")


def test_open_pr_limit_is_respected(scene, fake, pr):
    fake.push(REPO, "main", {".github/kernelevo.yml": "max_open_prs: 1\n"}, "limit")
    fake.push(REPO, "kernelevo/other/main", {"kernels/other/kernel.py": "x\n"}, "older result")
    fake._new_pull(REPO, REPO, "kernelevo/other/main", "main", "older", "", "kernelevo[bot]")
    scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo optimize"))
    (job,) = scene.wait_jobs(pr, 1)
    finish_like_a_gpu_worker(scene.jobs, job.id, gpu_summary(job.spec.op_id))
    scene.wait_reported(job.id)
    assert len(scene.kernel_pulls()) == 1 and "kernelevo/scale-shift/feature" not in fake.refs[REPO]
    scene.wait_status(pr, "max_open_prs")


def test_rate_limits_are_waited_out_or_deferred(scene, fake, pr):
    fake.inject(Fault("POST", r"/reactions$", 403, {"Retry-After": "1"}, "secondary rate limit"))
    fake.inject(Fault("GET", r"/collaborators/alice/permission$", 429,
                      {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "0"}, "rate limit"))
    payload = scene.comment(pr, "alice", "/kernelevo optimize")
    scene.send("issue_comment", payload)
    (job,) = scene.wait_jobs(pr, 1)
    assert scene.reactions(payload["comment"]["id"]) == ["+1"]
    fake.inject(Fault("POST", r"/git/trees$", 502, times=2))  # 5xx while publishing: retried
    fake.inject(Fault("POST", r"/git/blobs$", 500, times=1))
    finish_like_a_gpu_worker(scene.jobs, job.id, gpu_summary(job.spec.op_id))
    scene.wait_reported(job.id)
    assert len(scene.kernel_pulls()) == 1


def test_failed_publish_leaves_nothing_half_published_and_fails_the_run(scene, fake, pr):
    fake.inject(Fault("POST", r"/pulls$", 503, times=50))
    scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo optimize"))
    (job,) = scene.wait_jobs(pr, 1)
    finish_like_a_gpu_worker(scene.jobs, job.id, gpu_summary(job.spec.op_id))
    (run,) = scene.wait_run_completed()
    assert run["conclusion"] == "failure" and "publishing failed, nothing was pushed" in run["output"]["summary"]
    assert scene.kernel_pulls() == [] and "kernelevo/scale-shift/feature" not in fake.refs[REPO]
    scene.wait_status(pr, "publishing failed, nothing was pushed")


def test_pr_opened_lists_changed_ops_and_the_button_starts_a_job(scene, fake, pr):
    scene.send("pull_request", scene.pull_event("opened", pr))
    runs = wait_for(lambda: [r for r in fake.check_runs.values() if r["name"] == "kernelevo: ops"], "the ops run")
    assert "ops/norm.py::scale_shift" in runs[0]["output"]["summary"]
    assert runs[0]["_actions"][0]["identifier"] == "optimize"
    assert scene.state.discovery_run(runs[0]["id"]).pr_number == pr  # found again after a restart

    scene.send("check_run", scene.check_action(runs[0]["id"], "rita"))
    scene.wait_status(pr, "needs `write` permission")  # read permission: refused
    scene.send("check_run", scene.check_action(runs[0]["id"], "alice"))
    (job,) = scene.wait_jobs(pr, 1)
    assert job.spec.op_id == "ops/norm.py::scale_shift"


def test_auto_run_for_trusted_authors(scene, fake, pr):
    fake.push(REPO, "main", {".github/kernelevo.yml": "auto_run:\n  trusted_authors: [alice]\n"}, "cfg")
    scene.send("pull_request", scene.pull_event("opened", pr))
    scene.wait_jobs(pr, 1)
    scene.wait_status(pr, "Auto-run for alice")


def test_invalid_repo_config_is_reported(scene, fake, pr):
    fake.push(REPO, "main", {".github/kernelevo.yml": "max_open_prs: -3\nbogus: 1\n"}, "bad cfg")
    scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo optimize"))
    status = scene.wait_status(pr, "is invalid")
    assert "max_open_prs" in status and "bogus" in status and scene.jobs.list() == []


def test_cancel_goes_through_the_worker_tier_and_ends_the_run(scene, pr):
    scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo optimize"))
    (job,) = scene.wait_jobs(pr, 1)
    scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo status"))
    scene.wait_status(pr, "Status of this PR's jobs")
    assert "| queued |" in scene.status_text(pr)
    scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo cancel scale_shift"))
    wait_for(lambda: scene.jobs.get(job.id).state is JobState.CANCELLED, "the job to be cancelled")
    assert scene.jobs.get(job.id).chunks == 0  # queued: cancelled at once, it never runs
    (run,) = scene.wait_run_completed()
    assert run["conclusion"] == "cancelled"
    scene.wait_status(pr, "| cancelled |")


def test_push_cancels_jobs_for_the_old_head(scene, fake, pr):
    scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo optimize"))
    (job,) = scene.wait_jobs(pr, 1)
    fake.push(REPO, "feature", {"README.md": "new\n"}, "push")
    scene.send("pull_request", scene.pull_event("synchronize", pr))
    wait_for(lambda: scene.jobs.get(job.id).state is JobState.CANCELLED, "the old head's job to be cancelled")
    (run,) = scene.wait_run_completed()
    assert run["conclusion"] == "cancelled" and scene.kernel_pulls() == []


def test_min_permission_comes_from_the_default_branch_config(scene, fake, pr):
    fake.push(REPO, "main", {".github/kernelevo.yml": "trigger:\n  min_permission: maintain\n"}, "stricter")
    fake.push(REPO, "feature", {".github/kernelevo.yml": "trigger:\n  min_permission: read\n"}, "looser")
    scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo optimize"))
    scene.wait_status(pr, "opened by an author below `maintain` permission")
    rita = scene.comment(pr, "rita", "/kernelevo optimize")
    scene.send("issue_comment", rita)
    wait_for(lambda: scene.reactions(rita["comment"]["id"]) == ["-1"], "rita (read) to be refused")
    scene.approve(pr, "maya")
    scene.wait_jobs(pr, 1)


def test_a_failing_command_is_reported_on_the_pr(scene, fake, pr):
    fake.inject(Fault("GET", r"/pulls/\d+$", 404, message="Not Found", times=1))
    scene.approve(pr, "maya")
    scene.wait_status(pr, "`approve` failed")


def test_installation_token_is_cached_across_processes_calls(scene, fake, pr):
    scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo optimize"))
    (job,) = scene.wait_jobs(pr, 1)
    finish_like_a_gpu_worker(scene.jobs, job.id, gpu_summary(job.spec.op_id))
    scene.wait_reported(job.id)
    assert len(fake.exchanges) > 20
    requests = [e.request for e in fake.exchanges if e.template.startswith("/app/")]
    # per bot process (web, bot worker): a read-only token for checkouts and one for the REST calls, each
    # for this one repository (never every repository of the installation)
    assert 2 <= len(requests) <= 4 and fake.token_requests == [77] * len(requests)
    assert all(r["repositories"] == ["models"] for r in requests)
    assert {"contents": "read", "metadata": "read"} in [r["permissions"] for r in requests]


def test_config_budgets_reach_the_job_and_a_comment_only_lowers_them(scene, fake, pr):
    fake.push(REPO, "main", {".github/kernelevo.yml": "budgets:\n  tokens: 1000\n  candidates: 3\nmodel: gpt-small\n"},
              "budgets")
    scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo optimize --budget 500"))
    (lowered,) = scene.wait_jobs(pr, 1)
    assert (lowered.spec.budgets.tokens, lowered.spec.budgets.candidates) == (500, 3)
    assert (lowered.spec.model, lowered.spec.proposer) == ("gpt-small", "llm")

    for login, count, tokens in (("alice", 2, 1000), ("maya", 3, 5000)):  # a new commit each: a new job
        fake.push(REPO, "feature", {"README.md": f"{login}\n"}, "push")
        scene.send("issue_comment", scene.comment(pr, login, "/kernelevo optimize --budget 5000 --model gpt-huge"))
        job = scene.wait_jobs(pr, count)[-1]
        assert job.spec.budgets.tokens == tokens and job.spec.budgets.candidates == 3
        assert job.spec.model == ("gpt-small" if login == "alice" else "gpt-huge")
        if login == "alice":
            scene.wait_status(pr, "above the repository's `budgets.tokens` (1000); using 1000")


def test_progress_reaches_the_check_run_throttled(scene, pr):
    from workflows.dispatch import BOT_PROGRESS_TASK
    from workflows.models import JobProgress, OriginKind, WorkerIdentity

    scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo optimize"))
    (job,) = scene.wait_jobs(pr, 1)
    wait_for(lambda: scene.jobs.get(job.id).links.check_run_id, "the job to be linked")
    worker = WorkerIdentity(node="gpu0@test", pid=1, device="cuda")
    record = scene.jobs.get(job.id)
    scene.jobs.store.claim(job.id, record.epoch, worker)
    scene.jobs.store.heartbeat(job.id, record.epoch, worker, JobProgress(generation=2, evaluated=5, accepted=1,
                                                                         best_speedup_vs_eager=1.25))
    for _ in range(3):  # three chunk starts within one progress interval (60 s)
        scene.jobs.dispatcher.notify_bot(BOT_PROGRESS_TASK, job.id, OriginKind.PR)
    run = wait_for(lambda: (r := scene.job_runs()[0])["status"] == "in_progress" and r, "the run to be in progress")
    assert "generation 2, 5 evaluated, 1 accepted, best 1.25x over eager" in run["output"]["summary"]
    scene.jobs.store.finish(job.id, record.epoch, worker, JobState.FAILED, error="the GPU fell off the bus")
    scene.jobs.dispatcher.notify_bot("kernelevo.bot.publish", job.id, OriginKind.PR)
    (run,) = scene.wait_run_completed()
    assert run["conclusion"] == "failure" and "the GPU fell off the bus" in run["output"]["summary"]
    assert [o["title"] for o in run["_output_history"]].count("Searching") == 1
