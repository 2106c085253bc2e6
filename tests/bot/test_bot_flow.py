"""End-to-end: signed webhooks into the real app, PyGithub against the fake GitHub, jobs, follow-up PRs."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from bot_harness import OP_GELU, OP_V2, REPO
from github_server import Fault

SEARCH_DATA = Path(__file__).resolve().parents[1] / "search" / "data"
sys.path.insert(0, str(SEARCH_DATA.parent))  # search_doubles (the search's own test doubles)


def test_optimize_opens_follow_up_pr_and_rerun_updates_it(harness, fake, pr):
    payload = harness.comment(pr, "alice", "Looks good.\n\n/kernelevo optimize --budget 50000\nthanks")
    response = harness.send("issue_comment", payload)
    assert response.status_code == 202
    harness.settle()

    assert harness.reactions(payload["comment"]["id"]) == ["+1"]
    assert [c["op_id"] for c in harness.search.calls] == ["ops/norm.py::scale_shift"]
    assert harness.search.calls[0]["task_exists"]
    follow_ups = harness.kernel_pulls()
    assert len(follow_ups) == 1
    follow_up = follow_ups[0]
    assert follow_up["head"]["ref"] == "kernelevo/scale-shift/feature"
    assert follow_up["base"]["ref"] == "feature"  # against the PR's head branch
    files = fake.files_at(REPO, "kernelevo/scale-shift/feature")
    kernel_dir = "kernels/scale_shift"
    assert {f"{kernel_dir}/kernel.py", f"{kernel_dir}/manifest.json", f"{kernel_dir}/test_scale_shift.py",
            f"{kernel_dir}/report.md"} <= set(files)
    assert files["ops/norm.py"] == OP_V2  # built on top of the PR head
    manifest = json.loads(files[f"{kernel_dir}/manifest.json"])
    assert manifest["op_id"] == "ops/norm.py::scale_shift"
    report = files[f"{kernel_dir}/report.md"]
    assert "1.50x" in report and "NVIDIA H200" in report
    assert "kernelevo optimize ops/norm.py --op ops/norm.py::scale_shift" in report
    assert "1.50x faster" in follow_up["body"]
    status = harness.status_text(pr)
    assert f"#{follow_up['number']} (created)" in status and "succeeded" in status
    job_run = [r for r in fake.check_runs.values() if r["name"].startswith("kernelevo: optimize")]
    assert len(job_run) == 1 and job_run[0]["conclusion"] == "success"

    # a new push and a new request: the same follow-up PR is force-updated, not a second one
    first_commit = fake.refs[REPO]["kernelevo/scale-shift/feature"]
    fake.push(REPO, "feature", {"README.md": "models v2\n"}, "docs")
    harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo optimize"))
    harness.settle()
    assert len(harness.kernel_pulls()) == 1
    assert fake.refs[REPO]["kernelevo/scale-shift/feature"] != first_commit
    files = fake.files_at(REPO, "kernelevo/scale-shift/feature")
    assert "kernel version 2" in files[f"{kernel_dir}/kernel.py"]
    assert files["README.md"] == "models v2\n"
    assert "(updated)" in harness.status_text(pr)
    assert len(harness.bot_comments(pr)) == 1  # one comment, edited in place


def test_non_collaborator_cannot_start_jobs(harness, fake, pr):
    harness.send("issue_comment", harness.comment(pr, "eve", "/kernelevo optimize"))
    harness.settle()
    assert "needs `write` permission on the repository (the commenter has `none`)" in harness.status_text(pr)
    harness.send("issue_comment", harness.comment(pr, "rita", "/kernelevo approve"))
    harness.settle()
    assert "`approve` needs `write` permission" in harness.status_text(pr)
    assert harness.search.calls == []


def test_bots_and_edits_are_ignored(harness, fake, pr):
    bot = harness.comment(pr, "ci-helper[bot]", "/kernelevo optimize", kind="Bot")
    own = harness.comment(pr, "kernelevo[bot]", "/kernelevo optimize", kind="Bot")
    edited = harness.comment(pr, "alice", "/kernelevo optimize", action="edited")
    for payload in (bot, own, edited):
        assert harness.send("issue_comment", payload).status_code in (200, 202)
    harness.settle()
    assert harness.search.calls == []
    assert not any("kernelevo:status" in c["body"] for c in harness.bot_comments(pr))
    assert all(harness.reactions(p["comment"]["id"]) == [] for p in (bot, own, edited))


def test_comments_on_issues_are_ignored(harness, fake, pr):
    payload = harness.comment(pr, "alice", "/kernelevo optimize")
    del payload["issue"]["pull_request"]
    harness.send("issue_comment", payload)
    harness.settle()
    assert harness.search.calls == [] and harness.bot_comments(pr) == []


def test_malformed_commands_get_a_helpful_reply(harness, fake, pr):
    payload = harness.comment(pr, "alice", "/kernelevo optimise\n/kernelevo optimize --backend metal")
    harness.send("issue_comment", payload)
    harness.settle()
    assert harness.reactions(payload["comment"]["id"]) == ["confused"]
    status = harness.status_text(pr)
    assert "did you mean `/kernelevo optimize`" in status
    assert "--backend must be one of triton, cuda, any" in status
    assert "/kernelevo status" in status  # the generated help
    assert harness.search.calls == []


def test_unknown_op_lists_the_known_ones(harness, fake, pr):
    harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo optimize scale_shfit"))
    harness.settle()
    status = harness.status_text(pr)
    assert "`scale_shfit` (did you mean `scale_shift`?)" in status
    assert "ops/norm.py::scale_shift" in status
    assert harness.search.calls == []


def test_named_op_and_backend_flag(harness, fake, pr):
    harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo optimize scale_shift --backend cuda"))
    harness.settle()
    assert [(c["op_id"], c["backend"]) for c in harness.search.calls] == [("ops/norm.py::scale_shift", "cuda")]


def test_fork_pr_needs_approval_bound_to_head_sha(harness, fake):
    fake.fork(REPO, "mallory/models")
    fake.push("mallory/models", "speedup", {"ops/gelu.py": OP_GELU}, "add op")
    number = fake.open_pull(REPO, "speedup", "main", "mallory", head_repo="mallory/models")["number"]

    # the fork's author asks: refused until a maintainer approves this commit
    harness.send("issue_comment", harness.comment(number, "mallory", "/kernelevo optimize"))
    harness.settle()
    assert harness.search.calls == []
    assert "comes from a fork" in harness.status_text(number)

    # a non-maintainer cannot approve
    harness.send("issue_comment", harness.comment(number, "rita", "/kernelevo approve"))
    harness.settle()
    assert harness.search.calls == []

    # the maintainer approves: the waiting request runs on exactly that commit
    harness.send("issue_comment", harness.comment(number, "maya", "/kernelevo approve"))
    harness.settle()
    assert [c["op_id"] for c in harness.search.calls] == ["ops/gelu.py::fast_gelu"]
    follow_up = harness.kernel_pulls()[0]
    assert follow_up["base"]["ref"] == "main" and follow_up["head"]["ref"] == "kernelevo/fast-gelu/main"
    assert "comes from a fork" in follow_up["body"]

    # a new push voids the approval
    fake.push("mallory/models", "speedup", {"ops/gelu.py": OP_GELU + "\n# more\n"}, "tweak")
    harness.send("pull_request", harness.pull_event("synchronize", number))
    harness.send("issue_comment", harness.comment(number, "mallory", "/kernelevo optimize"))
    harness.settle()
    assert len(harness.search.calls) == 1
    assert "older commit" in harness.status_text(number)


def test_job_rechecks_head_sha_before_starting(harness, fake, pr):
    harness.search.release.clear()
    from kernelevo.jobs import JobRequest

    pinned = fake.pulls[REPO][pr]["head"]["sha"]
    fake.push(REPO, "feature", {"README.md": "moved\n"}, "push after approval")
    request = JobRequest(REPO, pr, pinned, "feature", ["ops/norm.py::scale_shift"], "any", None, None,
                         "alice", 77, "pr")
    refusal = harness.runner.hooks.before_start("job-x", request)
    assert refusal and "head moved" in refusal
    current = dict(request.__dict__, head_sha=fake.pulls[REPO][pr]["head"]["sha"])
    assert harness.runner.hooks.before_start("job-y", JobRequest(**current)) is None
    harness.search.release.set()


def test_no_speedup_beyond_noise_opens_nothing(harness, fake, pr):
    harness.search.speedup = 1.01
    harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo optimize"))
    harness.settle()
    assert harness.kernel_pulls() == []
    assert "no PR: nothing beats eager and torch.compile" in harness.status_text(pr)
    run = [r for r in fake.check_runs.values() if r["name"].startswith("kernelevo: optimize")][0]
    assert run["conclusion"] == "neutral"


def test_speedup_within_spread_opens_nothing(harness, fake, pr):
    harness.search.speedup, harness.search.spread = 1.10, 0.2
    harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo optimize"))
    harness.settle()
    assert harness.kernel_pulls() == []
    assert "within the timing spread" in harness.status_text(pr)


def test_open_pr_limit_is_respected(harness, fake, pr):
    fake.push(REPO, "main", {".github/kernelevo.yml": "max_open_prs: 1\n"}, "limit")
    fake.push(REPO, "kernelevo/other/main", {"kernels/other/kernel.py": "x\n"}, "older result")
    fake._new_pull(REPO, REPO, "kernelevo/other/main", "main", "older", "", "kernelevo[bot]")
    harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo optimize"))
    harness.settle()
    assert len(harness.kernel_pulls()) == 1  # only the old one
    assert "kernelevo/scale-shift/feature" not in fake.refs[REPO]
    assert "max_open_prs" in harness.status_text(pr)


def test_rate_limited_calls_are_retried(harness, fake, pr):
    fake.inject(Fault("POST", r"/reactions$", 403, {"Retry-After": "1"}, "secondary rate limit"))
    fake.inject(Fault("GET", r"/collaborators/alice/permission$", 429,
                      {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "0"}, "rate limit"))
    payload = harness.comment(pr, "alice", "/kernelevo optimize")
    harness.send("issue_comment", payload)
    harness.settle()
    assert harness.reactions(payload["comment"]["id"]) == ["+1"]
    assert len(harness.kernel_pulls()) == 1


def test_long_rate_limit_defers_the_work_instead_of_blocking(fake, app_keys, tmp_path, pr):
    from bot_harness import Harness

    h = Harness(fake, app_keys[0], tmp_path, max_wait_s=0.1)
    try:
        fake.inject(Fault("POST", r"/reactions$", 403, {"Retry-After": "1"}, "secondary rate limit"))
        payload = h.comment(pr, "alice", "/kernelevo optimize")
        h.send("issue_comment", payload)
        h.settle()
        assert h.reactions(payload["comment"]["id"]) == ["+1"]  # the deferred item ran again
        assert len(h.kernel_pulls()) == 1
        assert h.work.failures == []
    finally:
        h.close()


def test_5xx_while_publishing_is_retried(harness, fake, pr):
    fake.inject(Fault("POST", r"/git/trees$", 502, times=2))
    fake.inject(Fault("POST", r"/git/blobs$", 500, times=1))
    harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo optimize"))
    harness.settle()
    assert len(harness.kernel_pulls()) == 1


def test_failed_publish_leaves_nothing_half_published(harness, fake, pr):
    fake.inject(Fault("POST", r"/pulls$", 503, times=50))
    harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo optimize"))
    harness.settle()
    assert harness.kernel_pulls() == []
    assert "kernelevo/scale-shift/feature" not in fake.refs[REPO]  # the new branch was removed again
    assert "publishing failed, nothing was pushed" in harness.status_text(pr)
    run = [r for r in fake.check_runs.values() if r["name"].startswith("kernelevo: optimize")][0]
    assert run["conclusion"] == "failure"


def test_failed_update_restores_the_previous_result(harness, fake, pr):
    harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo optimize"))
    harness.settle()
    before = fake.refs[REPO]["kernelevo/scale-shift/feature"]
    fake.push(REPO, "feature", {"README.md": "again\n"}, "push")
    fake.inject(Fault("PATCH", r"/pulls/\d+$", 500, times=50))
    harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo optimize"))
    harness.settle()
    assert fake.refs[REPO]["kernelevo/scale-shift/feature"] == before


def test_pr_opened_lists_changed_ops_and_the_button_starts_a_job(harness, fake, pr):
    harness.send("pull_request", harness.pull_event("opened", pr))
    harness.settle()
    runs = [r for r in fake.check_runs.values() if r["name"] == "kernelevo: ops"]
    assert len(runs) == 1
    assert "ops/norm.py::scale_shift" in runs[0]["output"]["summary"]
    assert runs[0]["_actions"][0]["identifier"] == "optimize"
    assert harness.search.calls == []  # listing only; no auto-run configured

    harness.send("check_run", harness.check_action(runs[0]["id"], "rita"))
    harness.settle()
    assert harness.search.calls == []  # read permission: refused
    harness.send("check_run", harness.check_action(runs[0]["id"], "alice"))
    harness.settle()
    assert len(harness.search.calls) == 1 and len(harness.kernel_pulls()) == 1


def test_auto_run_for_trusted_authors(harness, fake, pr):
    fake.push(REPO, "main", {".github/kernelevo.yml": "auto_run:\n  trusted_authors: [alice]\n"}, "cfg")
    harness.send("pull_request", harness.pull_event("opened", pr))
    harness.settle()
    assert len(harness.search.calls) == 1
    assert len(harness.kernel_pulls()) == 1 and "succeeded" in harness.status_text(pr)


def test_invalid_repo_config_is_reported(harness, fake, pr):
    fake.push(REPO, "main", {".github/kernelevo.yml": "max_open_prs: -3\nbogus: 1\n"}, "bad cfg")
    harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo optimize"))
    harness.settle()
    status = harness.status_text(pr)
    assert "is invalid" in status and "max_open_prs" in status and "bogus" in status
    assert harness.search.calls == []


def test_cancel_and_status(harness, fake, pr):
    harness.search.release.clear()
    harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo optimize"))
    harness.work.join(10)
    harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo status"))
    harness.work.join(10)
    assert "running" in harness.status_text(pr) or "queued" in harness.status_text(pr)
    harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo cancel"))
    harness.settle()
    assert harness.kernel_pulls() == []
    status = harness.status_text(pr)
    assert "cancelled" in status
    harness.search.release.set()


def test_push_cancels_jobs_for_the_old_head(harness, fake, pr):
    harness.search.release.clear()
    harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo optimize"))
    harness.work.join(10)
    fake.push(REPO, "feature", {"README.md": "new\n"}, "push")
    harness.send("pull_request", harness.pull_event("synchronize", pr))
    harness.settle()
    assert [j.state for j in harness.runner.find(REPO, pr)] == ["cancelled"]
    assert harness.kernel_pulls() == []
    harness.search.release.set()


def test_progress_updates_are_throttled(harness, fake, pr):
    harness.search.progress_steps = 5

    def advance(step):
        harness.clock.now += 30.0  # progress every 30 s of (fake) time

    harness.search.on_step = advance
    harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo optimize"))
    harness.settle()
    run = [r for r in fake.check_runs.values() if r["name"].startswith("kernelevo: optimize")][0]
    progress = [o for o in run["_output_history"] if o["title"] == "Searching"]
    (link,) = harness.ctx.links.values()
    assert link.progress_seq == 3  # updates at t=30 (first), 90, 150: at most one per minute
    assert 1 <= len(progress) <= 3  # an update overtaken by a newer one is dropped, never written late
    assert "generation 4" in progress[-1]["summary"]  # the last write carries the latest report
    assert run["status"] == "completed" and run["conclusion"] == "success"  # the final update always goes out


def test_installation_token_is_cached_across_calls(harness, fake, pr):
    harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo optimize"))
    harness.settle()
    assert len(fake.exchanges) > 20
    assert fake.token_requests == [77]


@pytest.mark.slow
def test_real_search_through_the_bot_on_cpu(fake, app_keys, tmp_path):
    """The real run_search and evaluator behind the bot: on CPU the winner is verified but not timed,
    so the bot must say so and open nothing."""
    pytest.importorskip("kernelevo.search.api")
    pytest.importorskip("evaluator")
    pytest.importorskip("triton")
    from bot_harness import Harness
    from search_doubles import KnownGoodProposer

    from kernelevo.search.budget import Budget
    from kernelevo.search.proposer import Proposal

    class CorrectProposer(KnownGoodProposer):  # only the correct kernel, at a few block sizes
        def propose(self, request):
            block = (256, 512, 1024, 2048)[request.seed % 4]
            return [Proposal(source=self.GOOD.replace("BLOCK = 1024", f"BLOCK = {block}"),
                             strategy=f"block{block}", operator=request.operator)]

    fake.push(REPO, "task", {"tasks/scale_add.py": (SEARCH_DATA / "scale_add.py").read_text()}, "add a task")
    number = fake.open_pull(REPO, "task", "main", "alice")["number"]
    h = Harness(fake, app_keys[0], tmp_path, real_search={
        "make_proposer": lambda req: CorrectProposer(),
        "make_budget": lambda req: Budget(candidates=2, plateau_generations=None), "device": "cpu"})
    try:
        h.send("issue_comment", h.comment(number, "alice", "/kernelevo optimize --backend triton"))
        h.settle(timeout=600)
        (job,) = h.runner.find(REPO, number)
        assert job.state == "succeeded", job.error
        result = job.result["ops"]["tasks/scale_add.py::Model"]
        assert result["candidates_evaluated"] == 2 and result["best"], json.dumps(result, default=str)[:3000]
        assert result["best"]["verdict"]["verdict"] == "accepted"
        json.dumps(job.to_dict())  # the whole status is JSON-able (the Celery queue will store it)
        assert h.kernel_pulls() == []
        assert "verified but not timed (no GPU)" in h.status_text(number)
        run = [r for r in fake.check_runs.values() if r["name"].startswith("kernelevo: optimize")][0]
        assert run["conclusion"] == "neutral"
    finally:
        h.close()


def test_a_failing_command_is_reported_on_the_pr(harness, fake, pr):
    fake.inject(Fault("GET", r"/pulls/\d+$", 404, message="Not Found", times=1))
    harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo approve"))
    harness.settle()
    assert "`approve` failed" in harness.status_text(pr)
    assert harness.work.failures == []


def test_check_run_is_closed_when_reporting_fails(harness, fake, pr):
    harness.search.release.clear()
    harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo optimize"))
    harness.work.join(10)
    deadline = time.monotonic() + 10
    while [j.state for j in harness.runner.find(REPO, pr)] != ["running"]:  # past the SHA re-check
        assert time.monotonic() < deadline
        time.sleep(0.01)
    fake.inject(Fault("GET", r"/repos/acme/models$", 500, times=4))  # finish_job's first call, every retry
    harness.search.release.set()
    harness.settle()
    run = [r for r in fake.check_runs.values() if r["name"].startswith("kernelevo: optimize")][0]
    assert run["status"] == "completed" and run["conclusion"] == "failure"
    assert "HTTP 500" in run["output"]["summary"]


def test_min_permission_comes_from_the_default_branch_config(harness, fake, pr):
    fake.push(REPO, "main", {".github/kernelevo.yml": "trigger:\n  min_permission: maintain\n"}, "stricter")
    # the PR's own copy of the config cannot loosen it
    fake.push(REPO, "feature", {".github/kernelevo.yml": "trigger:\n  min_permission: read\n"}, "looser")
    harness.send("issue_comment", harness.comment(pr, "alice", "/kernelevo optimize"))
    harness.settle()
    # alice (write) is now below the minimum: as the PR's author she may ask, but it needs approval
    assert harness.search.calls == []
    assert "opened by an author below `maintain` permission" in harness.status_text(pr)
    harness.send("issue_comment", harness.comment(pr, "rita", "/kernelevo optimize"))
    harness.settle()
    assert "needs `maintain` permission on the repository (the commenter has `read`)" in harness.status_text(pr)
    harness.send("issue_comment", harness.comment(pr, "maya", "/kernelevo approve"))
    harness.settle()
    assert len(harness.search.calls) == 1
