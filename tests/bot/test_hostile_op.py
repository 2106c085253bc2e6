"""A PR whose op module attacks at import time reaches nothing, and its job fails while the bot serves others.

The op module below runs in whatever process imports it — in KernelEvo that is only ever a sandbox on a
worker (the verifier's reference process, the offline proposer's process). At import it tries every route we
know to something of value: the environment, every ``/proc/*/environ`` and ``/proc/*/mem`` it can open, the App
key file, the Redis server, the fake GitHub, the host's files; then it raises with what it found, so the job fails
and its error carries the evidence. The bot process never imports it: while the job runs, another PR's command is
answered, and no secret appears anywhere the job or the check run shows.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from bot_harness import REPO, Scene, Worker, wait_for

from workflows.models import JobState

MARKER = "SECRET-MARKER-7f3a"

HOSTILE = '''import json, os, socket

import kernelevo

MARKER, KEY, REDIS_PORT, GITHUB_PORT, HOST_FILE = {marker!r}, {key!r}, {redis_port}, {github_port}, {host_file!r}
FOUND = {{}}


def _try(name, fn):
    try:
        FOUND[name] = ["reached", repr(fn())[:200]]
    except Exception as exc:
        FOUND[name] = ["refused", type(exc).__name__]


leaks = sorted(k for k, v in os.environ.items() if MARKER in v or "KERNELEVO" in k or "REDIS" in k or "TOKEN" in k)
FOUND["environment"] = ["reached", leaks] if leaks else ["refused", ""]
me, seen = os.getpid(), []
for pid in (p for p in os.listdir("/proc") if p.isdigit()):
    for what in ("environ", "mem"):
        try:
            with open(f"/proc/{{pid}}/{{what}}", "rb") as handle:
                data = handle.read(1 << 16) if what == "environ" else b""
                if what == "mem":
                    with open(f"/proc/{{pid}}/maps") as maps:
                        start = int(maps.readline().split("-")[0], 16)
                    handle.seek(start)
                    data = handle.read(16)
        except (OSError, ValueError):
            continue
        if int(pid) != me and what == "mem" or MARKER.encode() in data:
            seen.append(f"{{pid}}/{{what}}")
FOUND["proc"] = ["reached", seen] if seen else ["refused", ""]
_try("key_file", lambda: open(KEY).read())
_try("redis", lambda: socket.create_connection(("127.0.0.1", REDIS_PORT), timeout=3).recv(1))
_try("github", lambda: socket.create_connection(("127.0.0.1", GITHUB_PORT), timeout=3).recv(1))
_try("host_file", lambda: open(HOST_FILE, "w").write("escaped"))
raise RuntimeError("PROBES " + json.dumps(FOUND))


@kernelevo.optimize(inputs=lambda device: [(1.0,)])
def evil(x):
    return x * 2.0
'''


@pytest.mark.slow
def test_an_op_module_attacking_at_import_reaches_nothing_and_its_job_fails(fake, redis_server, start_bot, tmp_path):
    key_file = tmp_path / "app-key.pem"
    key_file.write_text(f"-----BEGIN PRIVATE KEY----- {MARKER}")
    host_file = tmp_path / "escaped.txt"
    port = int(redis_server.url.rsplit(":", 1)[1].split("/")[0])
    github_port = int(fake.base_url.rsplit(":", 1)[1].split("/")[0])
    worker = Worker("cpu1", redis_server.url, tmp_path, extra_env={
        "KERNELEVO_LLM_API_KEY": MARKER, "GITHUB_TOKEN": MARKER, "KERNELEVO_GITHUB_PRIVATE_KEY_PATH": str(key_file)})
    worker.start()
    try:
        source = HOSTILE.format(marker=MARKER, key=str(key_file), redis_port=port, github_port=github_port,
                                host_file=str(host_file))
        fake.push(REPO, "main", {".github/kernelevo.yml": "budgets:\n  candidates: 2\nmax_open_prs: 2\n"}, "budget")
        fake.push(REPO, "hostile", {"ops/evil.py": source}, "add an op")
        number = fake.open_pull(REPO, "hostile", "main", "alice")["number"]
        fake.push(REPO, "other", {"ops/other.py": "x = 1\n"}, "another PR")
        other = fake.open_pull(REPO, "other", "main", "alice")["number"]
        scene = Scene(fake, redis_server, start_bot(device="cpu"))

        scene.send("issue_comment", scene.comment(number, "alice", "/kernelevo optimize"))
        (job,) = scene.wait_jobs(number, 1)
        scene.send("issue_comment", scene.comment(other, "alice", "/kernelevo help"))  # the bot keeps serving
        wait_for(lambda: scene.bot_comments(other), "the bot to answer the other PR", timeout=120)

        done = wait_for(lambda: (r := scene.jobs.get(job.id)).state.terminal and r, "the job to end", timeout=600)
        assert done.state is JobState.FAILED, done
        match = re.search(r"PROBES (\{.*?\})(?:\s|$|\))", done.error or "")
        assert match, done.error
        found = json.loads(match.group(1))
        assert set(found) == {"environment", "proc", "key_file", "redis", "github", "host_file"}
        for route in ("environment", "proc", "key_file", "redis", "github"):
            assert found[route][0] == "refused", (route, found[route])
        assert not host_file.exists()  # whatever it wrote stayed in its private, discarded tmpfs
        (run,) = scene.wait_run_completed(timeout=300)
        assert run["conclusion"] == "failure"
        shown = json.dumps(run) + (done.error or "") + json.dumps(scene.bot_comments(number))
        assert MARKER not in shown and MARKER not in Path(scene.bot.log_path).read_text(errors="replace")
    finally:
        worker.stop()
