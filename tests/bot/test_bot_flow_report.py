"""End-to-end: a follow-up PR's report from the job's full archive, as the job store keeps a GPU worker's run.

The GPU worker is played as in test_bot_flow.py, and here it also mirrors its run into Redis the way
``workflows.chunk`` does (``RedisRunMirror``, fenced by its claim), so the bot restores the archive, commits
every plot it draws and shows the same report on the request's check run."""

from __future__ import annotations

import json
import os
import re

from bot_harness import REPO, gpu_summary, wait_for

PNG = b"\x89PNG\r\n\x1a\n"
BRANCH = "kernelevo/scale-shift/feature"
KERNEL_DIR = "kernels/scale_shift"
OP = "ops/norm.py::scale_shift"


def archive_of(summary: dict) -> list[dict]:
    """A run's candidates: two rejected, an accepted parent, and the winner (the summary's source), as the
    search appends them to ``archive.jsonl``; one detail is hostile."""
    def record(cid: str, gen: int, reason: str, *, parents: tuple[str, ...] = (), source: str | None = None,
               fitness: float = 0.0, elapsed: float = 1.0) -> dict:
        accepted = reason == "ok"
        return {"id": cid, "kind": "evaluated", "generation": gen, "island": 0, "operator": "mutate",
                "strategy": "tiled", "parent_ids": list(parents), "source": source or f"# {cid}\n",
                "source_sha": cid, "accepted": accepted, "fitness": fitness, "run_elapsed_s": elapsed,
                "tokens_in": 100, "tokens_out": 50,
                "verdict": {"verdict": "accepted" if accepted else "rejected", "reason": reason,
                            "detail": "case 1 differs <img src=x onerror=alert(1)> @team"}}

    return [record("g0-0", 0, "incorrect", elapsed=10.0), record("g0-1", 0, "compile_error", elapsed=20.0),
            record("g0-2", 0, "ok", fitness=1.2, elapsed=30.0),
            {"id": "g1-0", "kind": "duplicate", "duplicate_of": "g0-2", "generation": 1, "accepted": True},
            record("g1-2", 1, "incorrect", parents=("g0-2",), elapsed=40.0),
            record(summary["best"]["id"], 1, "ok", parents=("g0-2",), source=summary["best"]["source"], fitness=1.5,
                   elapsed=50.0)]


def finish_with_run(jobs, job_id: str, summary: dict, archive: list[dict]) -> None:
    """Claim the job, mirror its archive into the job store, record the end and tell the bot (workflows.chunk)."""
    from workflows.dispatch import BOT_PUBLISH_TASK
    from workflows.mirror import RedisRunMirror
    from workflows.models import ClaimOutcome, JobState, WorkerIdentity
    from workflows.store import result_from_summary

    record = jobs.get(job_id)
    worker = WorkerIdentity(node="gpu0@test", pid=os.getpid(), device="cuda")
    assert jobs.store.claim(job_id, record.epoch, worker).outcome is ClaimOutcome.RUN
    mirror = RedisRunMirror(jobs.store.client, jobs.store.keys, job_id, record.epoch, worker, max_bytes=2**24)
    for line in archive:
        mirror.appended("archive.jsonl", json.dumps(line) + "\n")
    mirror.close()
    jobs.store.finish(job_id, record.epoch, worker, JobState.SUCCEEDED, result=result_from_summary(summary))
    jobs.dispatcher.notify_bot(BOT_PUBLISH_TASK, job_id, record.spec.origin.kind)


def test_the_follow_up_commits_every_plot_of_the_archive_and_the_check_run_shows_the_report(scene, fake, pr):
    scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo optimize"))
    (job,) = scene.wait_jobs(pr, 1)
    wait_for(lambda: scene.jobs.get(job.id).links.check_run_id, "the job to be linked to its check run")
    summary = {**gpu_summary(OP), "candidates_evaluated": 5, "candidates_accepted": 2,
               "rejections": {"incorrect": 2, "compile_error": 1}}
    finish_with_run(scene.jobs, job.id, summary, archive_of(summary))

    (run,) = scene.wait_run_completed()
    scene.wait_reported(job.id)
    (follow_up,) = scene.kernel_pulls()
    blobs = fake.blobs_at(REPO, BRANCH)
    for name in ("speedup", "fitness", "rejections", "lineage"):
        path = f"{KERNEL_DIR}/plots/{name}.png"
        assert blobs[path].startswith(PNG), path  # committed as bytes, not as text
        assert f"](https://github.com/{REPO}/blob/{BRANCH}/{path}?raw=true)" in follow_up["body"]
    report = blobs[f"{KERNEL_DIR}/report.md"].decode()
    assert "(plots/lineage.png)" in report and "| incorrect | 2 |" in report and "| compile_error | 1 |" in report
    # the winner's lineage: the winner named by the id the job kept (by its source for older records)
    assert "`g0-2`" in report and f"`{summary['best']['id']}`" in report

    text = run["output"]["summary"]
    first, _, rest = text.partition("\n\n")
    assert first == f"- `{OP}`: #{follow_up['number']} (created): " + first.split("(created): ", 1)[1]
    assert rest.startswith(f"## KernelEvo: `{OP}`") and "| incorrect | 2 |" in rest
    assert f"](https://github.com/{REPO}/blob/{BRANCH}/{KERNEL_DIR}/plots/lineage.png?raw=true)" in rest
    assert len(text) <= 65_535
    for shown in (follow_up["body"], report, text):  # the hostile detail is inert everywhere
        outside = re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", shown, flags=re.S))
        assert "<img" not in outside and "@team" not in outside
    # the report kept for the check run is dropped once the run is completed
    key = scene.state.key("check-reports", run["id"])
    wait_for(lambda: not scene.state.client.exists(key), "the kept report to be dropped")
