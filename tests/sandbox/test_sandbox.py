"""The sandbox every untrusted process runs in: what it can reach, and what it cannot.

Real bubblewrap, real namespaces: a child Python inside the sandbox tries to reach the network (a
server this test listens with on loopback), a secret file, the parent's /proc entries, files outside
its private dir and the system directories for writing; everything must fail, while the interpreter,
torch and its own temp dir work.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kernelevo.sandbox import Bind, IsolationMode, IsolationUnavailable, SandboxPolicy, spawn, system_binds
from kernelevo.sandbox import probe as probe_mod
from kernelevo.sandbox.cgroups import cgroup2_mount, find_parent, own_cgroup, usable_parent
from kernelevo.sandbox.policy import bwrap_argv

ROOT = Path(__file__).resolve().parents[2]

PROBE = r"""
import json, os, socket, sys
out = {"uid": os.getuid(), "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
       "env": dict(os.environ)}
def attempt(name, fn):
    try:
        out[name] = ("reached", repr(fn())[:200])
    except Exception as exc:
        out[name] = ("refused", type(exc).__name__)
port, secret, parent = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
attempt("network", lambda: socket.create_connection(("127.0.0.1", port), timeout=2).recv(16))
attempt("secret", lambda: open(secret).read())
attempt("parent_environ", lambda: open(f"/proc/{parent}/environ", "rb").read())
attempt("write_usr", lambda: open("/usr/kernelevo-probe", "w").write("x"))
attempt("write_project", lambda: open(sys.argv[4] + "/kernelevo-probe", "w").write("x"))
attempt("own_tmp", lambda: open(os.environ["TMPDIR"] + "/ok", "w").write("fine"))
attempt("torch", lambda: __import__("torch").ones(2).sum().item())
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def report():
    report = probe_mod.isolation(IsolationMode.REQUIRED, None)
    if not report.working:
        pytest.skip(f"no working sandbox here: {report.problem}")
    return report


@pytest.fixture()
def listener():
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(30)
    accepted = []

    def serve():
        try:
            conn, _ = server.accept()
            accepted.append(True)
            conn.sendall(b"hello")
            conn.close()
        except OSError:
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    server.close()


def _policy(tmp_path: Path) -> SandboxPolicy:
    private = tmp_path / "private"
    private.mkdir()
    return SandboxPolicy(name="probe", binds=(*system_binds([ROOT]), Bind(source=private, writable=True)),
                         env={"PATH": "/usr/bin:/bin", "TMPDIR": str(private), "HOME": str(private)}, cwd=private)


def _run(report, policy: SandboxPolicy, *args: str) -> dict:
    code = f"import sys; sys.path[:0] = {[str(ROOT)]!r}; exec({PROBE!r})"
    sandbox = spawn(policy, [sys.executable, "-I", "-c", code, *args], report, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE)
    out, err = sandbox.proc.communicate(timeout=120)
    assert sandbox.returncode == 0, err.decode()
    return json.loads(out)


def test_untrusted_code_reaches_nothing(report, tmp_path, listener, monkeypatch):
    port, accepted = listener
    secret = tmp_path / "app-key.pem"
    secret.write_text("-----BEGIN PRIVATE KEY-----")
    result = _run(report, _policy(tmp_path), str(port), str(secret), str(os.getpid()), str(ROOT))
    assert result["network"][0] == "refused" and not accepted
    assert result["secret"][0] == "refused"
    assert result["parent_environ"][0] == "refused"
    assert result["write_usr"][0] == "refused" and result["write_project"][0] == "refused"
    assert result["own_tmp"][0] == "reached" and result["torch"] == ["reached", "2.0"]
    assert result["uid"] == os.getuid()  # as in an ordinary process: nothing says "sandbox"
    assert os.getpid() not in result["pids"] and max(result["pids"]) < 10  # its own PID namespace
    assert set(result["env"]) <= {"PATH", "TMPDIR", "HOME", "PWD", "LC_CTYPE"}  # PWD: bwrap; LC_CTYPE: Python
    assert not (ROOT / "kernelevo-probe").exists()


def test_kill_ends_every_process_of_the_sandbox(report, tmp_path):
    marker = tmp_path / "private" / "grandchild.pid"
    code = ("import os, subprocess, sys, time; p = subprocess.Popen(['sleep', '300']); "
            f"open({str(marker)!r}, 'w').write('started'); time.sleep(300)")
    sandbox = spawn(_policy(tmp_path), [sys.executable, "-I", "-c", code], report)
    for _ in range(600):
        if marker.exists():
            break
        threading.Event().wait(0.05)
    assert marker.exists()
    sandbox.kill()
    assert sandbox.poll() is not None
    leftovers = subprocess.run(["pgrep", "-f", "sleep 300"], capture_output=True, text=True).stdout.split()
    mine = [pid for pid in leftovers if _in_tree_of(int(pid), sandbox.pid)]
    assert not mine


def _in_tree_of(pid: int, root: int) -> bool:
    while pid > 1:
        if pid == root:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return False


def test_argv_binds_only_what_the_policy_names(tmp_path):
    policy = SandboxPolicy(name="x", binds=(Bind(source=Path("/usr")), Bind(source=tmp_path, writable=True)),
                           env={"A": "1"}, cwd=tmp_path)
    argv = bwrap_argv(policy, ["python3", "-c", "pass"], bwrap="bwrap", block_fd=7)
    assert argv[:2] == ["bwrap", "--unshare-user"] and "--unshare-net" in argv and "--unshare-pid" in argv
    assert argv[argv.index("--clearenv") + 1: argv.index("--clearenv") + 4] == ["--setenv", "A", "1"]
    assert ["--ro-bind", "/usr", "/usr"] == argv[argv.index("/usr") - 1: argv.index("/usr") + 2]
    at = argv.index(str(tmp_path))
    assert ["--bind", str(tmp_path), str(tmp_path)] == argv[at - 1: at + 2]
    assert argv[argv.index("--block-fd") + 1] == "7" and argv[-4:] == ["--", "python3", "-c", "pass"]
    assert "/etc" not in argv and "/home" not in argv and "/root" not in argv


def test_system_view_never_includes_home_or_whole_etc():
    inside = {str(b.inside) for b in system_binds()}
    assert "/etc" not in inside and "/home" not in inside and "/root" not in inside and "/tmp" not in inside
    assert any(p.startswith("/etc/") for p in inside)


def test_refuses_without_bubblewrap(monkeypatch):
    monkeypatch.setattr(probe_mod.shutil, "which", lambda name: None)
    probe_mod.isolation.cache_clear()
    monkeypatch.setenv("KERNELEVO_ISOLATION", "required")
    from kernelevo.settings import reset_settings_cache

    reset_settings_cache()
    try:
        with pytest.raises(IsolationUnavailable) as info:
            probe_mod.require_isolation("the candidate kernel")
        text = str(info.value)
        assert "bubblewrap" in text and "apt-get install bubblewrap" in text and "KERNELEVO_ISOLATION=off" in text
    finally:
        probe_mod.isolation.cache_clear()
        reset_settings_cache()


def test_override_runs_without_namespaces_but_with_the_policy_environment(tmp_path, monkeypatch):
    report = probe_mod.isolation(IsolationMode.OFF, None)
    assert not report.working and "without a sandbox" in (report.problem or "")
    monkeypatch.setenv("KERNELEVO_SECRET_TOKEN", "s3cret")
    policy = _policy(tmp_path)
    sandbox = spawn(policy, [sys.executable, "-I", "-c", "import os, json; print(json.dumps(dict(os.environ)))"],
                    report, stdout=subprocess.PIPE)
    out, _ = sandbox.proc.communicate(timeout=60)
    assert "KERNELEVO_SECRET_TOKEN" not in json.loads(out)


def test_cgroup_detection_is_explained():
    mount = cgroup2_mount("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n")
    assert mount == Path("/sys/fs/cgroup")
    assert own_cgroup("0::/system.slice/kernelevo.service\n") == "/system.slice/kernelevo.service"
    assert "not a directory" in (usable_parent(Path("/nonexistent")) or "")
    parent, note = find_parent(None)
    assert (parent is None) == ("rlimits" in note)


def test_cgroup_limits_where_delegated(report, tmp_path):
    if report.cgroup_parent is None:
        pytest.skip(report.cgroup_note)
    policy = _policy(tmp_path).model_copy(update={"memory_mb": 256, "pids_max": 32})
    code = "x = bytearray(1024 * 1024 * 1024); print(len(x))"
    sandbox = spawn(policy, [sys.executable, "-I", "-c", code], report, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE)
    sandbox.proc.communicate(timeout=120)
    assert sandbox.returncode != 0 and sandbox.oom_killed()
    sandbox.kill()
