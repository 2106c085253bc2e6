"""Red-team escape probes: what code running in a *candidate's* sandbox can reach, as tests the sandbox must pass.

The in-process guards are Python and can be switched off from the candidate's process (see
``tests/candidates/redteam/``), so these probes assume arbitrary code in the sandbox and test only what the
OS sandbox (``evaluator.roles.policy("candidate", ...)`` under real bubblewrap) and the trusted parent do.

Tests marked ``xfail(strict=True)`` are holes open today: each says what should hold and fails loudly (XPASS)
once the hole is closed, so that its marker is removed then. Environment-dependent ones (cgroup delegation)
are marked only where the host lacks what closes them.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluator import processes, roles
from kernelevo.sandbox import IsolationMode, spawn
from kernelevo.sandbox import probe as probe_mod

ROOT = Path(__file__).resolve().parents[2]
CANARY = "CANARY-redteam-7f3c"

# Runs inside the sandbox; prints one JSON object: probe name -> ["reached" | "refused", detail].
PROBE = r"""
import json, os, resource, socket, subprocess, sys
out = {}
def attempt(name, fn):
    try:
        value = fn()
        try:
            json.dumps(value)
        except TypeError:
            value = repr(value)[:400]
        out[name] = ["reached", value]
    except Exception as exc:
        out[name] = ["refused", type(exc).__name__]
args = json.loads(sys.argv[1])
for name, code in args["probes"].items():
    attempt(name, lambda: eval(code, {"os": os, "socket": socket, "resource": resource, "subprocess": subprocess,
                                      "args": args}))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def report():
    report = probe_mod.isolation(IsolationMode.REQUIRED, None)
    if not report.working:
        pytest.skip(f"no working sandbox here: {report.problem}")
    return report


def _candidate_policy(tmp_path: Path):
    private = tmp_path / "candidate-1-abc"
    (private / "outbox").mkdir(parents=True)
    return roles.policy("candidate", "cpu", private), private


def _probe(report, policy, probes: dict[str, str], **extra) -> dict:
    payload = json.dumps({"probes": probes, **extra})
    sandbox = spawn(policy, [sys.executable, "-I", "-c", PROBE, payload], report, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE)
    try:
        out, err = sandbox.proc.communicate(timeout=120)
    finally:
        sandbox.kill()
    assert sandbox.returncode == 0, err.decode()[-2000:]
    return json.loads(out)


def _no_cgroup(report) -> bool:
    return report.cgroup_parent is None


# ------------------------------------------------------------------------------------------- refused today
def test_host_loopback_and_abstract_sockets_unreachable(report, tmp_path):
    tcp = socket.create_server(("127.0.0.1", 0))
    abstract = socket.socket(socket.AF_UNIX)
    name = f"kernelevo-redteam-{os.getpid()}-{time.monotonic_ns()}"
    abstract.bind("\0" + name)
    abstract.listen(1)
    tcp.settimeout(0.1)
    abstract.settimeout(0.1)
    try:
        policy, _ = _candidate_policy(tmp_path)
        result = _probe(report, policy, {
            "tcp": "socket.create_connection(('127.0.0.1', args['port']), timeout=2)",
            "abstract_unix": "socket.socket(socket.AF_UNIX).connect(chr(0) + args['name'])",
        }, port=tcp.getsockname()[1], name=name)
        assert result["tcp"][0] == "refused"
        assert result["abstract_unix"][0] == "refused"
        for server in (tcp, abstract):
            with pytest.raises(OSError):  # nothing ever connected (socket.timeout is an OSError)
                server.accept()
    finally:
        tcp.close()
        abstract.close()


def test_nothing_next_to_the_repository_is_visible(report, tmp_path):
    """A key file beside the checkout (``<repo>/../app-key.pem``) or in a home directory stays invisible: of the
    repository's parent folder the sandbox sees only what it binds (the checkout itself, the Python install)."""
    policy, _ = _candidate_policy(tmp_path)
    bound = {str(b.inside) for b in policy.binds}
    parent = ROOT.parent
    result = _probe(report, policy, {"listing": f"sorted(os.listdir({str(parent)!r}))",
                                     "home": "sorted(os.listdir('/home'))"})
    visible = result["listing"][1] if result["listing"][0] == "reached" else []
    for entry in visible:
        path = str(parent / entry)
        assert any(b == path or b.startswith(path + "/") for b in bound), f"{path} visible but not bound"
    # /home shows nothing of the host's: at most the process's own private home, bound at its drawn account's
    home = Path(policy.env["HOME"])
    own = [home.relative_to("/home").parts[0]] if home.is_relative_to("/home") else []
    assert result["home"][0] == "refused" or result["home"][1] in ([], own)


def test_writes_outside_the_private_folder_are_refused(report, tmp_path):
    policy, private = _candidate_policy(tmp_path)
    target = tmp_path / "outside.txt"
    result = _probe(report, policy, {
        # a package folder of the project (bound read-only; the checkout's root may sit under the sandbox's own
        # tmpfs /tmp when the checkout is under the host's /tmp, and a write there never reaches the host)
        "project": f"open({str(ROOT / 'kernelevo' / 'redteam-probe.txt')!r}, 'w').write('x')",
        "python_install": f"open({str(Path(sys.prefix) / 'redteam-probe.txt')!r}, 'w').write('x')",
        "host_tmp": f"open({str(target)!r}, 'w').write('x')",
        "private": f"open({str(private / 'ok.txt')!r}, 'w').write('x')",
    })
    assert result["project"][0] == "refused" and result["python_install"][0] == "refused"
    assert not target.exists()  # a write "reached" its own tmpfs /tmp inside, never the host's
    assert result["private"][0] == "reached"
    assert not (ROOT / "kernelevo" / "redteam-probe.txt").exists()


def test_double_fork_and_setsid_do_not_survive_the_kill(report, tmp_path):
    policy, private = _candidate_policy(tmp_path)
    beat = private / "beat"
    code = ("import os, sys, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            "        while True:\n"
            f"            open({str(beat)!r}, 'a').write('x'); time.sleep(0.05)\n"
            "    os._exit(0)\n"
            "time.sleep(600)\n")
    sandbox = spawn(policy, [sys.executable, "-I", "-c", code], report)
    try:
        for _ in range(600):  # wait (generously) for the grandchild to start beating
            if beat.exists() and beat.stat().st_size > 2:
                break
            time.sleep(0.05)
        assert beat.exists()
    finally:
        sandbox.kill()
    size = beat.stat().st_size
    time.sleep(1.0)  # a survivor would append about 20 bytes here
    assert beat.stat().st_size == size


# ----------------------------------------------------------------------------------------------- open today
def test_parent_never_follows_a_link_in_the_private_folder(report, tmp_path):
    """The candidate owns its private folder; the parent must not read host files through links planted there.
    Here the sandbox replaces its process log with a link to a host file (in a real attack: the parent's own
    /proc/self/environ, with its tokens); the log the parent reports must not contain that file."""
    secret = tmp_path / "host-secret.txt"
    secret.write_text(CANARY)
    policy, private = _candidate_policy(tmp_path)
    log = private / "process.log"
    log.write_bytes(b"ordinary output\n")
    result = _probe(report, policy, {"relink": f"(os.unlink({str(log)!r}), os.symlink({str(secret)!r}, "
                                               f"{str(log)!r}))"})
    assert result["relink"][0] == "reached"  # the private folder is the sandbox's to change
    parent_end, child_end = socket.socketpair()
    try:
        worker = processes.Worker(process=None, role="candidate", requests=parent_end, result_fd=-1,  # type: ignore[arg-type]
                                  log_path=log, private=private, nonce="n", memory_mb=1)
        leaked = CANARY in worker.log_tail()
        assert not leaked, "the parent read a host file through the link in the private folder"
    finally:
        parent_end.close()
        child_end.close()


def test_verdict_logs_never_hold_the_parents_environment(report):
    """The parent's secrets live in its environment (KERNELEVO_GITHUB_PRIVATE_KEY, the LLM key); /proc/self/environ
    shows the environment a process was started with, so the evaluation runs in a child started with a canary."""
    code = ("import json, sys; from evaluator import EvalOptions, evaluate; "
            "v = evaluate(sys.argv[1], sys.argv[2], device='cpu', options=EvalOptions(static_checks=True)); "
            "print(json.dumps({'verdict': v.verdict, 'logs': v.logs or '', 'detail': v.detail}))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELEVO_")}
    env["KERNELEVO_GITHUB_PRIVATE_KEY"] = CANARY
    done = subprocess.run([sys.executable, "-c", code, str(ROOT / "tests" / "tasks" / "softmax.py"),
                           str(ROOT / "tests" / "candidates" / "redteam" / "log_symlink_static.py")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    verdict = json.loads(done.stdout.strip().splitlines()[-1])
    assert verdict["verdict"] == "rejected"
    leaked = CANARY in verdict["logs"] or CANARY in verdict["detail"]
    assert not leaked, "the parent's environment reached the verdict"  # (never print the logs themselves)


def test_import_path_folders_under_private_roots_are_not_bound(report, tmp_path, monkeypatch):
    """``PYTHONPATH=$HOME`` or ``python -m`` started from a home directory puts that folder on sys.path; binding
    it shows the whole home directory (keys included) to every candidate."""
    site = tmp_path / "home-like"
    site.mkdir()
    (site / "app-key.pem").write_text(CANARY)
    monkeypatch.setattr(sys, "path", [*sys.path, str(site)])
    policy, _ = _candidate_policy(tmp_path)
    result = _probe(report, policy, {"key": f"open({str(site / 'app-key.pem')!r}).read()"})
    assert result["key"][0] == "refused"


def test_project_checkout_internals_are_not_visible(report, tmp_path):
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    policy, _ = _candidate_policy(tmp_path)
    result = _probe(report, policy, {"git": f"open({str(ROOT / '.git' / 'HEAD')!r}).read()"})
    assert result["git"][0] == "refused"


def test_no_nested_user_namespaces(report, tmp_path):
    """No user namespace inside the sandbox (the kernel attack surface behind most container escapes)."""
    if not report.disable_userns:
        pytest.skip("this bubblewrap cannot forbid nested user namespaces (--disable-userns needs bwrap >= 0.8)")
    policy, _ = _candidate_policy(tmp_path)
    result = _probe(report, policy, {"nested": "subprocess.run(['unshare', '-U', 'true'], capture_output=True)"
                                               ".returncode"})
    assert result["nested"][0] == "reached" and result["nested"][1] != "0", result


def test_tmpfs_memory_counts_against_the_cap(report, tmp_path, request):
    """/dev/shm (bwrap's /dev tmpfs: half the host's RAM) and /tmp (4 GB) hold memory no process maps: without a
    delegated cgroup the watchdog (resident set of the process tree) never sees it."""
    if _no_cgroup(report):
        request.applymarker(pytest.mark.xfail(strict=True, reason="no delegated cgroup: the RSS watchdog does not "
                                              "count tmpfs pages (/dev/shm is uncapped)"))
    policy, private = _candidate_policy(tmp_path)
    ready = private / "ready"
    code = ("import time\n"
            "open('/dev/shm/blob', 'wb').write(b'1' * (192 << 20))\n"
            f"open({str(ready)!r}, 'w').write('x')\n"
            "time.sleep(600)\n")
    sandbox = spawn(policy, [sys.executable, "-I", "-c", code], report)
    try:
        for _ in range(1200):
            if ready.exists():
                break
            time.sleep(0.05)
        assert ready.exists()
        measured = sandbox.memory_mb()
        if measured is None:
            measured = processes.process_tree_rss_mb(sandbox.pid)
        assert measured >= 192
    finally:
        sandbox.kill()


def test_process_count_is_bounded(report, tmp_path):
    """Without pids.max a fork bomb in the sandbox would exhaust the host's process table: where no cgroup is
    delegated, RLIMIT_NPROC (counted per user namespace, so only the sandbox's tasks) bounds it."""
    if _no_cgroup(report) and report.prlimit is None:
        pytest.skip("neither a delegated cgroup nor util-linux prlimit here")
    policy, _ = _candidate_policy(tmp_path)
    result = _probe(report, policy, {"nproc": "resource.getrlimit(resource.RLIMIT_NPROC)[1]",
                                     "pids_max": "open('/sys/fs/cgroup/pids.max').read().strip()"})
    nproc = int(result["nproc"][1]) if result["nproc"][0] == "reached" else -1
    pids = str(result["pids_max"][1]) if result["pids_max"][0] == "reached" else "max"
    limit = policy.pids_max or 512
    assert (0 <= nproc <= limit) or (pids.isdigit() and int(pids) <= limit)


@pytest.mark.xfail(strict=False, reason="the private folder is a bind of the host's temp disk with no quota "
                   "(RLIMIT_FSIZE bounds one file, not their number): a candidate can fill the host's disk")
def test_private_folder_has_a_size_cap(report, tmp_path):
    policy, private = _candidate_policy(tmp_path)
    result = _probe(report, policy, {"bytes": f"(lambda s: s.f_blocks * s.f_frsize)(os.statvfs({str(private)!r}))"})
    assert result["bytes"][0] == "reached"
    assert int(result["bytes"][1]) <= policy.tmp_size_mb * 2**20
