"""Chunk work folders: a live chunk's is never removed, a dead one's is swept on worker start and after each chunk.

Real folders, real processes holding them (killed with SIGKILL, as the OOM killer or Celery's time limit would),
a real redis-server for the folders the job store decides, and a real ``kernelevo worker`` for the sweeps it
runs itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from workflow_harness import ROOT, build_spec, settings_for, wait_for

from workflows.models import ClaimOutcome, JobState, WorkerIdentity
from workflows.workdirs import (
    OWNER_FILE,
    STAGING_PREFIX,
    Owner,
    Verdict,
    chunk_workdir,
    decide,
    job_state_in,
    sweep,
)

HOLD = """
import sys
from pathlib import Path
from workflows.workdirs import chunk_workdir
with chunk_workdir(sys.argv[1], Path(sys.argv[2])) as folder:
    (folder / "repo").mkdir()
    (folder / "repo" / "ops.py").write_text("x = 1\\n")
    print(folder, flush=True)
    sys.stdin.read()
"""


class Holder:
    """A process in its own work folder, as a chunk is (it holds the folder until killed or told to end)."""

    def __init__(self, job_id: str, root: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", HOLD, job_id, str(root)], cwd=ROOT, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdout is not None
        self.folder = Path(self.proc.stdout.readline().strip())
        assert self.folder.is_dir(), f"the holder did not start (exit {self.proc.poll()})"

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def end(self) -> None:
        self.proc.communicate("", timeout=60)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "tmp"
    folder.mkdir()
    return folder


WORKER = WorkerIdentity(node="cpu0@elsewhere", pid=4242, device="cpu")


def running_job(jobs, repo, seed: int) -> str:
    """A job a chunk on another worker runs (claimed through the store, as workflows.chunk claims it)."""
    record = jobs.submit(build_spec(jobs, repo, seed=seed, commit=f"{seed:040x}")).record
    assert jobs.store.claim(record.id, record.epoch, WORKER).outcome is ClaimOutcome.RUN
    return record.id


def finish(jobs, job_id: str) -> None:
    jobs.store.finish(job_id, jobs.get(job_id).epoch, WORKER, JobState.FAILED, error="test")


def folders(root: Path) -> set[str]:
    return {p.name for p in root.iterdir()}


def test_decisions():
    assert decide(Owner.ALIVE, JobState.SUCCEEDED, store_read=True) is Verdict.KEEP  # never a live one
    assert decide(Owner.ALIVE, None, store_read=True) is Verdict.KEEP
    assert decide(Owner.GONE, JobState.RUNNING, store_read=True) is Verdict.REMOVE  # the owner died mid-chunk
    assert decide(Owner.GONE, None, store_read=False) is Verdict.REMOVE
    assert decide(Owner.UNKNOWN, JobState.FAILED, store_read=True) is Verdict.REMOVE
    assert decide(Owner.UNKNOWN, JobState.RUNNING, store_read=True) is Verdict.KEEP
    assert decide(Owner.UNKNOWN, None, store_read=True) is Verdict.KEEP  # perhaps another deployment's job
    assert decide(Owner.UNKNOWN, None, store_read=False) is Verdict.KEEP


def test_a_live_owners_folder_is_kept_and_a_killed_ones_is_swept(jobs, repo, root):
    job_id = running_job(jobs, repo, seed=1)
    live, dead = Holder(job_id, root), Holder(job_id, root)
    try:
        dead.kill9()
        assert (dead.folder / "repo" / "ops.py").exists(), "SIGKILL leaves the folder behind"
        report = sweep(root, job_state_in(jobs.store))
        assert report.removed == [dead.folder] and report.kept == [live.folder]
        assert (live.folder / "repo" / "ops.py").read_text() == "x = 1\n"
        finish(jobs, job_id)  # the job is finished now, but its folder's owner still lives: it stays
        assert sweep(root, job_state_in(jobs.store)).kept == [live.folder]
    finally:
        live.end()
    assert folders(root) == set(), "a chunk that ends removes its own folder"


def test_lockless_folders_are_decided_by_the_job_store(jobs, repo, root, redis_server):
    finished = running_job(jobs, repo, seed=1)
    finish(jobs, finished)  # (one search per op at a time: the next one runs once this one ended)
    active = running_job(jobs, repo, seed=2)
    unknown = "job-0123456789ab"
    for job_id in (finished, active, unknown):
        (root / f"kernelevo-{job_id}-abcd1234" / "repo").mkdir(parents=True)  # as an older version left them
    redis_server.stop()
    assert sweep(root, job_state_in(jobs.store)).removed == [], "no store, no lockless folder removed"
    redis_server.start()
    wait_for(lambda: jobs.get(finished) is not None, "Redis to come back with its data")
    report = sweep(root, job_state_in(jobs.store))
    assert report.removed == [root / f"kernelevo-{finished}-abcd1234"]
    assert folders(root) == {f"kernelevo-{active}-abcd1234", f"kernelevo-{unknown}-abcd1234"}


def test_only_this_users_real_work_folders_are_touched(root, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / OWNER_FILE).write_text("")  # an unlocked owner file: a real work folder like it would go
    (outside / "precious").write_text("keep me")
    (root / "kernelevo-job-00000000000a-link").symlink_to(outside)
    (root / "kernelevo-job-00000000000b-file").write_text("a file, not a folder")
    for name in ("kernelevo-eval-abcd", "kernelevo-job-XYZ-abcd", "other"):
        (root / name).mkdir()
        (root / name / OWNER_FILE).write_text("")
    before = folders(root)
    assert sweep(root).removed == []
    assert folders(root) == before and (outside / "precious").read_text() == "keep me"


def test_a_staging_folder_goes_only_when_unlocked_and_old(root):
    import time

    stale = root / f"{STAGING_PREFIX}abcd1234"
    stale.mkdir()
    (stale / OWNER_FILE).write_text("")  # its maker died between locking and renaming
    empty = root / f"{STAGING_PREFIX}efgh5678"
    empty.mkdir()  # its maker died before making the lock file, or is about to: never removed
    assert sweep(root).removed == [], "a fresh staging folder may be one being made"
    later = time.time() + 3600
    assert sweep(root, now=lambda: later).removed == [stale]
    assert folders(root) == {empty.name}


def test_inside_a_work_folder_temporary_files_go_into_it(root, monkeypatch):
    monkeypatch.setenv("TMPDIR", "/somewhere-else")
    monkeypatch.setattr(tempfile, "tempdir", None)
    with chunk_workdir("job-00000000000c", root) as folder:
        assert folder.parent == root and folder.name.startswith("kernelevo-job-00000000000c-")
        assert tempfile.gettempdir() == str(folder / "tmp") == os.environ["TMPDIR"]
        child = subprocess.run([sys.executable, "-c", "import tempfile; print(tempfile.mkdtemp())"],
                               capture_output=True, text=True, check=True, timeout=60)
        assert Path(child.stdout.strip()).parent == folder / "tmp", "children's temporary files go there too"
        assert sweep(root).kept == [folder], "the folder's own process holds it"
    assert os.environ["TMPDIR"] == "/somewhere-else" and tempfile.tempdir is None
    assert folders(root) == set()


def _dead_folder(job_id: str, root: Path) -> Path:
    holder = Holder(job_id, root)
    holder.kill9()
    return holder.folder


def test_a_worker_sweeps_when_it_starts_and_after_each_chunk(redis_server, start_worker, repo, tmp_path):
    """The real worker: a folder a killed chunk left before the worker started is gone once it is ready; one
    left while it runs is gone after its next chunk; its own chunks leave nothing."""
    from workflows.client import JobsClient

    jobs = JobsClient.from_settings(settings_for(redis_server.url))
    root = tmp_path / "tmp"  # the harness's workers use it as their TMPDIR
    root.mkdir(exist_ok=True)
    before_start = _dead_folder("job-0000000000d1", root)
    worker = start_worker("sweeper", redis_server.url)
    assert worker.tmp == root
    wait_for(lambda: not before_start.exists(), "the worker's start-up sweep", timeout=60)
    while_running = _dead_folder("job-0000000000d2", root)
    live = Holder("job-0000000000d3", root)  # another worker's chunk on the same host
    try:
        job = jobs.submit(build_spec(jobs, repo, candidates=1)).record
        done = wait_for(lambda: (r := jobs.get(job.id)) is not None and r.state.terminal and r,
                        "the job to finish", timeout=400)
        assert done.state in (JobState.SUCCEEDED, JobState.NO_IMPROVEMENT), done.error
        wait_for(lambda: not while_running.exists(), "the sweep after the chunk", timeout=60)
        assert live.folder.exists() and (live.folder / "repo" / "ops.py").exists()
        assert not [name for name in folders(root) if name.startswith(f"kernelevo-{job.id}-")]
    finally:
        live.end()
