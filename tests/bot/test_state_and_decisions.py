"""The bot's Redis state (real redis-server), delivery leases, and the pure decisions: job settings from the
repo config and a comment, check-run conclusions, what reconciling does with a job."""

from __future__ import annotations

from datetime import timedelta

import pytest
from bot_harness import wait_for

from bot.checks import run_conclusion, run_summary
from bot.commands import Command
from bot.deliveries import Deliveries
from bot.jobspec import job_settings
from bot.reconcile import JobAction, lost_lines, plan_job
from bot.state import BotState, Conclusion, DeliveryClaim, OpLine, PendingRequest, RunLink
from kernelevo.repo_config import load_repo_config
from workflows.models import JobRecord, JobSpec, JobState, Origin, OriginKind, RepoSource, utcnow


@pytest.fixture
def state(redis_server) -> BotState:
    return BotState(redis_server.client())


# -- state ------------------------------------------------------------------------------------------------


def test_approvals_and_pending_requests_are_shared_by_every_bot_process(state, redis_server):
    other = BotState(redis_server.client())  # another process, its own connection
    assert state.approved_sha("a/b", 1) is None
    state.approve("a/b", 1, "sha1", "maya")
    state.approve("a/b", 1, "sha2", "maya")
    assert other.approved_sha("a/b", 1) == "sha2" and other.approved_sha("a/b", 2) is None
    command = Command("optimize", ops=["f"], budget=10, line=3)
    state.set_pending("a/b", 1, PendingRequest(command=command, requested_by="mallory", head_sha="s"))
    pending = other.pop_pending("a/b", 1)
    assert pending.command == command and pending.requested_by == "mallory"
    assert state.pop_pending("a/b", 1) is None  # taken once
    with pytest.raises(ValueError, match="not a repository name"):
        state.approve("a/b:evil*", 1, "s", "x")


def test_runs_jobs_installations_and_locks(state):
    run = RunLink(check_run_id=5, repo="a/b", installation_id=7, pr_number=1, head_sha="c" * 40,
                  ops=[OpLine(op_id="x.py::f"), OpLine(op_id="y.py::g")])
    state.put_run(run)
    assert state.open_runs() == [5] and state.run(5).line("y.py::g").job_id is None
    state.update_run(5, lambda r: r.model_copy(update={"completed": True}))
    assert state.open_runs() == [] and state.run(5).completed
    state.set_installation("a/b", 7)
    state.set_installation("c/d", 7)
    state.set_installation("e/f", 8)
    assert state.forget_installation(7) == ["a/b", "c/d"] and state.installations() == {"e/f": 8}
    with state.lock("x", wait_s=0) as first:
        with state.lock("x", wait_s=0) as second:
            assert first and not second
    with state.lock("x", wait_s=0) as again:
        assert again
    assert state.throttle("run:5", 60) and not state.throttle("run:5", 60)
    assert state.take_turn("sweep", "a", 60) and not state.take_turn("sweep", "b", 60)


def test_delivery_claims_leases_and_replays(state):
    first, second = Deliveries(state, lease_s=1.0), Deliveries(state, lease_s=1.0)
    assert first.claim("d1") is DeliveryClaim.NEW
    assert second.claim("d1") is DeliveryClaim.HANDLING  # being handled: never twice at once
    first.hold("d1", 2)
    first.handler_done("d1")
    assert second.claim("d1") is DeliveryClaim.HANDLING  # one handler still runs (its lease is renewed)
    first.handler_done("d1")
    assert second.claim("d1") is DeliveryClaim.DONE and first.pending() == 0

    assert first.claim("d2") is DeliveryClaim.NEW
    first.stop()  # this process dies: nobody renews its lease
    assert wait_for(lambda: second.claim("d2") is DeliveryClaim.NEW, "the dead handler's lease to lapse",
                    timeout=30)

    import redis

    assert second.claim("d3") is DeliveryClaim.NEW
    second.hold("d3", 1)
    second.handler_done("d3", redis.ConnectionError("gone"))  # failed on Redis: not marked handled
    assert Deliveries(state).claim("d3") is DeliveryClaim.NEW
    second.stop()


def test_the_lease_renewer_ends_when_no_delivery_is_held_and_comes_back_with_the_next(state):
    deliveries = Deliveries(state, lease_s=0.3)
    assert deliveries.claim("e1") is DeliveryClaim.NEW
    renewer = deliveries._thread
    assert renewer is not None and renewer.is_alive()
    deliveries.done_now("e1")
    renewer.join(timeout=30)  # idle: it neither talks to Redis (a warning a tick once Redis is gone) nor stays
    assert not renewer.is_alive()
    assert deliveries.claim("e2") is DeliveryClaim.NEW
    assert deliveries._thread is not None and deliveries._thread.is_alive()
    deliveries.stop()


# -- decisions --------------------------------------------------------------------------------------------


def _config(text: str):
    return load_repo_config(text)


def test_config_budgets_apply_and_a_comment_only_lowers_them_without_maintain():
    config = _config("budgets:\n  tokens: 1000\n  candidates: 3\n  minutes: 5\n  money_usd: 2\nbackends: [triton]\n"
                     "model: gpt-small\n")
    plain = job_settings(config, Command("optimize"), permission="write")
    assert (plain.budgets.tokens, plain.budgets.candidates, plain.budgets.minutes, plain.budgets.usd) == (
        1000, 3, 5.0, 2.0)
    assert plain.backend == "triton" and plain.model == "gpt-small" and plain.proposer == "llm" and not plain.notes

    lower = job_settings(config, Command("optimize", budget=500), permission="write")
    assert lower.budgets.tokens == 500 and not lower.notes
    higher = job_settings(config, Command("optimize", budget=5000, backend="cuda", model="gpt-huge"),
                          permission="write")
    assert higher.budgets.tokens == 1000 and higher.backend == "triton" and higher.model == "gpt-small"
    assert len(higher.notes) == 3 and "only `maintain` permission may raise it" in higher.notes[0]
    maintainer = job_settings(config, Command("optimize", budget=5000, backend="cuda", model="gpt-huge"),
                              permission="maintain")
    assert (maintainer.budgets.tokens, maintainer.backend, maintainer.model) == (5000, "cuda", "gpt-huge")
    assert not maintainer.notes

    offline = job_settings(_config("budgets:\n  candidates: 2\n"), Command("optimize", model="x"), permission="write")
    assert offline.proposer == "offline" and offline.model is None and offline.budgets.candidates == 2
    both = _config("backends: [triton, cuda]\n")
    assert job_settings(both, Command("optimize"), permission="write").backend == "any"
    assert job_settings(both, Command("optimize", backend="cuda"), permission="write").backend == "cuda"


def test_run_conclusion_and_summary_one_line_per_op():
    def run(*conclusions):
        return RunLink(check_run_id=1, repo="a/b", installation_id=1, head_sha="c", submitted=True,
                       ops=[OpLine(op_id=f"op{i}", job_id=f"job-{i:012d}", outcome=f"outcome {i}", conclusion=c)
                            for i, c in enumerate(conclusions)])

    assert run_conclusion(run(Conclusion.SUCCESS, Conclusion.NEUTRAL)) == (Conclusion.SUCCESS,
                                                                          "Published a faster kernel")
    assert run_conclusion(run(Conclusion.SUCCESS, Conclusion.FAILURE))[0] is Conclusion.FAILURE
    assert run_conclusion(run(Conclusion.CANCELLED, Conclusion.CANCELLED))[0] is Conclusion.CANCELLED
    assert run_conclusion(run(Conclusion.NEUTRAL, Conclusion.CANCELLED))[0] is Conclusion.NEUTRAL
    assert run_summary(run(Conclusion.NEUTRAL, Conclusion.SUCCESS), {}) == "- `op0`: outcome 0\n- `op1`: outcome 1"
    pending = RunLink(check_run_id=1, repo="a/b", installation_id=1, head_sha="c", ops=[OpLine(op_id="f|`x")])
    assert run_summary(pending, {}) == "- `f\\|'x`: not queued yet"  # op ids cannot break the Markdown


def _record(state: JobState, published: bool = False) -> JobRecord:
    spec = JobSpec(repo="a/b", commit_sha="c" * 40, op_id="x.py::f", device="cpu",
                   source=RepoSource(blob_key="kernelevo:blob:" + "0" * 64, sha256="0" * 64, size_bytes=1),
                   origin=Origin(kind=OriginKind.PR, pr_number=1, installation_id=7))
    return JobRecord(id="job-000000000001", spec=spec, state=state, published=published)


def test_what_reconciling_does_with_each_job_and_run():
    assert plan_job(None) is JobAction.LOST
    assert plan_job(_record(JobState.RUNNING)) is JobAction.PROGRESS
    assert plan_job(_record(JobState.QUEUED)) is JobAction.PROGRESS
    assert plan_job(_record(JobState.SUCCEEDED)) is JobAction.PUBLISH
    assert plan_job(_record(JobState.FAILED, published=True)) is JobAction.FORGET
    now = utcnow()
    run = RunLink(check_run_id=1, repo="a/b", installation_id=1, head_sha="c", created_at=now,
                  ops=[OpLine(op_id="a", job_id="job-000000000001"), OpLine(op_id="b")])
    assert lost_lines(run, now) == []  # being submitted by a live process
    assert lost_lines(run, now + timedelta(hours=1)) == ["b"]  # abandoned
    assert lost_lines(run.model_copy(update={"submitted": True}), now) == ["b"]



def test_a_follow_up_never_writes_into_a_folder_that_holds_another_ops_kernel_on_its_base(tmp_path):
    import json

    from bot.jobflow import _refuse_another_ops_folder
    from kernelevo.kernel_store import KernelStoreError, kernel_dir_for

    kernels = tmp_path / "kernels"
    (kernels / "fast_gelu").mkdir(parents=True)
    (kernels / "fast_gelu" / "manifest.json").write_text(json.dumps({"op_id": "ops/gelu.py::fast_gelu"}))
    _refuse_another_ops_folder(tmp_path, "ops/gelu.py::fast_gelu", "main")  # its own folder
    _refuse_another_ops_folder(tmp_path, "evil/fast.py::fast_gelu", "main")  # its long name is free
    long_name = kernel_dir_for(tmp_path, "evil/fast.py::fast_gelu")
    assert long_name.name != "fast_gelu" and not long_name.exists()  # deciding writes nothing
    long_name.mkdir()
    (long_name / "manifest.json").write_text(json.dumps({"op_id": "ops/x.py::y"}))
    with pytest.raises(KernelStoreError, match="hold other ops"):
        _refuse_another_ops_folder(tmp_path, "evil/fast.py::fast_gelu", "main")
    (kernels / "fast_gelu" / "manifest.json").write_text("[not a manifest")
    with pytest.raises(KernelStoreError, match="fast_gelu/ on main holds an unreadable manifest"):
        _refuse_another_ops_folder(tmp_path, "ops/gelu.py::fast_gelu", "main")
