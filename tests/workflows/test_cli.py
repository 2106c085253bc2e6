"""`kernelevo jobs submit/show/list/cancel/run` and `kernelevo worker` against a real Redis and a real worker, and
their errors: bad arguments exit 2 before anything is sent, no Redis exits 3 at once, unknown jobs exit 1."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner
from workflow_harness import free_port, make_repo, wait_for

from kernelevo.cli import app
from kernelevo.settings import reset_settings_cache


@pytest.fixture
def env(monkeypatch, request):
    """Set KERNELEVO_* variables for in-process CLI calls (settings are re-read)."""

    def set_env(**values: str) -> None:
        for name, value in values.items():
            monkeypatch.setenv(name, value)
        reset_settings_cache()

    request.addfinalizer(reset_settings_cache)
    return set_env


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def submit_args(repo, *extra):
    return ("jobs", "submit", str(repo / "scale_add.py"), "--device", "cpu", "--proposer", "offline",
            "--budget-candidates", "2", "--generation-size", "2", *extra)


@pytest.mark.slow
def test_jobs_commands_against_real_redis_and_a_worker(redis_server, start_worker, repo, env, tmp_path):
    env(KERNELEVO_REDIS_URL=redis_server.url)
    worker = start_worker("cli1", redis_server.url, GITHUB_TOKEN="ghp_not_for_workers")
    assert "ignoring GITHUB_TOKEN (workers hold no GitHub credential)" in worker.log()

    first = run(*submit_args(repo, "--json"))
    assert first.exit_code == 0, first.output
    submitted = json.loads(first.stdout)
    job_id = submitted["job"]["id"]
    assert submitted["created"] and submitted["job"]["spec"]["op_id"] == "scale_add.py::Model"
    again = run(*submit_args(repo))
    assert again.exit_code == 0 and again.stdout.strip() == job_id and "already submitted" in again.stderr

    (repo / "NOTES.md").write_text("changed\n")  # another tree: a new job, which waits for the op's lock
    second = run(*submit_args(repo))
    assert second.exit_code == 0 and second.stdout.strip() != job_id
    other = second.stdout.strip()
    cancelled = run("jobs", "cancel", other)
    assert cancelled.exit_code == 0 and f"{other}: cancelled" in cancelled.stdout

    def state():
        shown = run("jobs", "show", job_id, "--json")
        assert shown.exit_code == 0, shown.output
        record = json.loads(shown.stdout)
        return record if record["state"] not in ("queued", "running") else None

    done = wait_for(state, "the job to finish", timeout=400)
    assert done["state"] == "succeeded" and done["chunks"] >= 1 and done["result"]["best_source"]
    human = run("jobs", "show", job_id)
    assert f"{job_id}: succeeded" in human.stdout and "result    budget_candidates" in human.stdout

    # the job's run directory from the worker tier's mirror, rendered as a report with its timeline
    run_dir = tmp_path / "job-run"
    fetched = run("jobs", "run", job_id, "--out", str(run_dir))
    assert fetched.exit_code == 0, fetched.output
    assert (run_dir / "best" / "kernel.py").read_text() == done["result"]["best_source"]
    reported = run("report", str(run_dir), "--out", str(tmp_path / "report"))
    assert reported.exit_code == 0, reported.output
    assert "Best fitness over time" in (tmp_path / "report" / "report.md").read_text()
    again_run = run("jobs", "run", job_id, "--out", str(run_dir))  # never over an existing directory
    assert again_run.exit_code == 2 and "not an empty directory" in again_run.stderr

    listed = run("jobs", "list", "--json")
    assert [r["id"] for r in json.loads(listed.stdout)] == [other, job_id]
    only = run("jobs", "list", "--state", "cancelled", "--json")
    assert [r["id"] for r in json.loads(only.stdout)] == [other]
    table = run("jobs", "list")
    assert job_id in table.stdout and "succeeded" in table.stdout and "scale_add.py::Model" in table.stdout

    finished = run("jobs", "cancel", job_id, "--json")
    assert finished.exit_code == 1 and json.loads(finished.stdout)["outcome"] == "finished"
    missing = run("jobs", "show", "job-000000000000")
    assert missing.exit_code == 1 and "no job job-000000000000" in missing.stderr
    no_run = run("jobs", "run", "job-000000000000", "--out", str(tmp_path / "none"))
    assert no_run.exit_code == 1 and "no job job-000000000000" in no_run.stderr
    assert "ghp_not_for_workers" not in worker.log()


@pytest.mark.parametrize("args", [("jobs", "list"), ("jobs", "show", "job-000000000001"),
                                  ("jobs", "cancel", "job-000000000001"), ("worker", "--device", "cpu")])
def test_without_redis_every_command_fails_at_once_with_the_url_redacted(args, env, repo):
    env(KERNELEVO_REDIS_URL=f"redis://:s3cret@127.0.0.1:{free_port()}/0")
    result = run(*args)
    assert result.exit_code == 3, result.output
    assert "cannot reach Redis at redis://:***@127.0.0.1:" in result.stderr and "s3cret" not in result.output


def test_submit_without_redis_fails_after_checking_its_arguments(env, repo):
    env(KERNELEVO_REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")
    result = run(*submit_args(repo))
    assert result.exit_code == 3 and "KERNELEVO_REDIS_URL" in result.stderr


@pytest.mark.parametrize(("extra", "message"), [
    (("--budget-candidates", "0"), "--budget-candidates: input should be greater than or equal to 1"),
    (("--budget-minutes", "-1"), "--budget-minutes: input should be greater than 0"),
    (("--budget-usd", "0"), "--budget-usd: input should be greater than 0"),
    (("--budget-tokens", "0"), "--budget-tokens"),
    (("--plateau", "0"), "--plateau"),
    (("--generation-size", "0"), "--generation-size"),
    (("--op", "nope"), "no op named 'nope'"),
    (("--device", "tpu"), "--device must be cpu or cuda"),
    (("--backend", "rocm"), "--backend must be"),
    (("--proposer", "evil.module:factory"), "--proposer"),
])
def test_bad_submit_arguments_exit_2_before_anything_is_sent(extra, message, env, repo):
    env(KERNELEVO_REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")  # nothing listens: exit 2 proves no send
    result = run(*submit_args(repo, *extra))
    assert result.exit_code == 2, result.output
    assert message in result.stderr


def test_other_bad_arguments_exit_2(env, tmp_path):
    env(KERNELEVO_REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")
    missing = run("jobs", "submit", str(tmp_path / "nowhere.py"))
    assert missing.exit_code == 2 and "no such file" in missing.stderr
    assert run("jobs", "show", "../../etc").exit_code == 2
    bad_state = run("jobs", "list", "--state", "done")
    assert bad_state.exit_code == 2 and "not a job state" in bad_state.stderr
    no_device = run("worker")
    assert no_device.exit_code == 2 and "--gpu N" in no_device.stderr


def test_a_folder_with_several_ops_needs_op(env, tmp_path):
    env(KERNELEVO_REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")
    repo = make_repo(tmp_path / "repo")
    (repo / "other.py").write_text((repo / "scale_add.py").read_text())
    result = run("jobs", "submit", str(repo), "--device", "cpu")
    assert result.exit_code == 2 and "2 ops found" in result.stderr and "--op" in result.stderr
