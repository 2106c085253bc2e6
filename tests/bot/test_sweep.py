"""Scheduled sweeps: the pure decisions, and a sweep of the fake GitHub's default branch into a real Redis job
store (the bot's own sweep code, in process; no worker needs to run for the jobs to be queued)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from bot_harness import OP_GELU, OP_V1, OP_V2, REPO, settings_for

from bot.sweep import plan_sweep, run_sweep, sweep_due
from workflows.models import OriginKind


def test_sweep_is_due_when_a_cron_time_passed_since_the_last_one():
    last = datetime(2026, 6, 1, 3, 0, tzinfo=timezone.utc)  # a Monday, 03:00
    assert not sweep_due("0 3 * * 1", last, last + timedelta(days=6, hours=23))
    assert sweep_due("0 3 * * 1", last, last + timedelta(days=7))
    assert sweep_due("*/5 * * * *", last, last + timedelta(minutes=5))


def test_plan_takes_missing_then_stale_ops_within_the_pr_limit():
    ops = {"a.py::fresh": "h1", "b.py::stale": "new", "c.py::missing": "h3", "d.py::missing2": "h4"}
    kernels = {"a.py::fresh": "h1", "b.py::stale": "old", "gone.py::x": "h9"}
    plan = plan_sweep(ops, kernels, open_prs=0, max_open_prs=10, in_flight=set())
    assert plan.enqueue == ["c.py::missing", "d.py::missing2", "b.py::stale"] and plan.deferred == []
    assert plan.reasons == {"c.py::missing": "missing", "d.py::missing2": "missing", "b.py::stale": "stale"}
    limited = plan_sweep(ops, kernels, open_prs=1, max_open_prs=3, in_flight={"d.py::missing2"})
    assert limited.enqueue == ["c.py::missing"] and limited.deferred == ["b.py::stale"]  # 1 open + 1 in flight
    assert plan_sweep(ops, kernels, open_prs=3, max_open_prs=3, in_flight=set()).enqueue == []
    assert len(plan_sweep(ops, {}, open_prs=0, max_open_prs=10, in_flight=set(), max_jobs=2).enqueue) == 2


def _hashes(tmp_path, files: dict[str, str]) -> dict[str, str]:
    from kernelevo.discovery import discover

    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return discover(tmp_path, ["**/*.py"], []).hashes()


@pytest.fixture
def sweeper(fake, redis_server, app_keys):
    from bot.service import base_context
    from kernelevo.settings import Settings

    values = settings_for(redis_server.url).model_dump()
    settings = Settings(**{**values, "webhook_secret": "s", "github_app_id": fake.app_id,
                           "github_private_key": app_keys[0], "github_api_url": fake.base_url})
    return base_context(settings, device="cuda")


def test_a_sweep_enqueues_only_missing_and_stale_ops_and_honours_the_pr_limit(sweeper, fake, tmp_path):
    ctx = sweeper
    hashes = _hashes(tmp_path / "old", {"ops/norm.py": OP_V1})
    manifest = json.dumps({"op_id": "ops/norm.py::scale_shift", "source_hash": hashes["ops/norm.py::scale_shift"],
                           "envelope": {}})
    fresh = OP_GELU.replace("fast_gelu", "fresh_op")
    fresh_hash = _hashes(tmp_path / "fresh", {"ops/fresh.py": fresh})["ops/fresh.py::fresh_op"]
    fake.push(REPO, "main", {
        ".github/kernelevo.yml": "sweep:\n  schedule: '0 3 * * *'\nmax_open_prs: 2\nbudgets:\n  candidates: 2\n",
        "ops/norm.py": OP_V2,  # changed since its kernel was verified: stale
        "kernels/scale_shift/manifest.json": manifest, "kernels/scale_shift/kernel.py": "class ModelNew: ...\n",
        "ops/gelu.py": OP_GELU,  # no kernel: missing
        "ops/fresh.py": fresh, "kernels/fresh_op/kernel.py": "class ModelNew: ...\n",
        "kernels/fresh_op/manifest.json": json.dumps({"op_id": "ops/fresh.py::fresh_op", "source_hash": fresh_hash,
                                                      "envelope": {}}),
    }, "ops and kernels")
    fake.push(REPO, "kernelevo/old/main", {"kernels/old/kernel.py": "x\n"}, "an open kernel PR")
    fake._new_pull(REPO, REPO, "kernelevo/old/main", "main", "older", "", "kernelevo[bot]")
    ctx.state.set_installation(REPO, 77)

    start = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
    assert run_sweep(ctx, REPO, 77, start) is None  # the first look starts the schedule's clock
    assert run_sweep(ctx, REPO, 77, start + timedelta(hours=1)) is None  # 03:00 has not come yet
    plan = run_sweep(ctx, REPO, 77, start + timedelta(days=1))
    assert plan.enqueue == ["ops/gelu.py::fast_gelu"] and plan.deferred == ["ops/norm.py::scale_shift"]
    (job,) = ctx.jobs.list()
    assert job.spec.op_id == "ops/gelu.py::fast_gelu" and job.spec.origin.kind is OriginKind.SWEEP
    assert job.spec.origin.base_ref == "main" and job.spec.commit_sha == fake.refs[REPO]["main"]
    assert job.spec.budgets.candidates == 2 and job.spec.device == "cuda"
    assert [j.job_id for j in ctx.state.open_jobs()] == [job.id]

    # the next day the first sweep's job is still in flight: it holds the last free PR slot
    assert run_sweep(ctx, REPO, 77, start + timedelta(days=2)).enqueue == []
    ctx.jobs.cancel(job.id)
    later = run_sweep(ctx, REPO, 77, start + timedelta(days=3))
    assert sorted(later.enqueue) == ["ops/gelu.py::fast_gelu"]  # cancelled: missing again; the slot is free
    assert later.deferred == ["ops/norm.py::scale_shift"]


def test_the_bot_workers_tick_runs_due_sweeps(scene, fake):
    """The scheduler in `kernelevo bot-worker` (a tick whose turn is taken in Redis) starts a due sweep."""
    from bot.state import SweepState

    fake.push(REPO, "main", {".github/kernelevo.yml": "sweep:\n  schedule: '0 3 * * *'\n", "ops/gelu.py": OP_GELU},
              "sweep nightly")
    scene.state.set_installation(REPO, 77)
    scene.state.set_sweep_state(REPO, SweepState(last_run_at=datetime.now(timezone.utc) - timedelta(days=2)))
    from bot_harness import wait_for

    def both() -> list | None:
        found = scene.jobs.list()
        return found if len(found) >= 2 else None

    jobs = wait_for(both, "the sweep's two jobs", timeout=120)
    assert sorted(j.spec.op_id for j in jobs) == ["ops/gelu.py::fast_gelu", "ops/norm.py::scale_shift"]
    assert all(j.spec.origin.kind is OriginKind.SWEEP for j in jobs)
    state = wait_for(lambda: (s := scene.state.sweep_state(REPO)).job_ids and s, "the sweep to be recorded")
    assert sorted(state.job_ids) == sorted(j.id for j in jobs)
