"""From a run to ``kernels/<op>/``: the summary shows the kernel and the next command; ``--write-kernel`` keeps a
better or newer stored kernel unless ``--force``, and writes atomically (two writers never interleave)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from kernelevo.discovery import discover
from kernelevo.install_kernel import Action, NewFacts, StoredFacts, decide, install_accepted_kernel
from kernelevo.kernel_store import find_kernels, read_kernel
from kernelevo.search.targets import Target

ROOT = Path(__file__).parents[2]
T0 = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
HASH = "sha256:" + "a" * 64

OPS = '''import torch
import kernelevo


@kernelevo.optimize(
    inputs=lambda device: [(torch.randn(64, 128, device=device), torch.randn(128, device=device))],
    small_inputs=lambda device: [(torch.randn(9, 128, device=device), torch.randn(128, device=device))],
)
def bias_relu(x, b):
    return torch.relu(x + b)
'''

VERDICT = {"verdict": "accepted", "reason": "ok", "device": "cpu", "backend": "triton",
           "correctness": {"cases": [{"case": 0, "inputs": [{"shape": [9, 128], "dtype": "float32"},
                                                            {"shape": [128], "dtype": "float32"}]}]}}


def stored(**kw) -> StoredFacts:
    return StoredFacts(**{"readable": True, "source_hash": HASH, "created": T0 - timedelta(hours=1), **kw})


@pytest.mark.parametrize(("facts", "new_speedup", "force", "action", "words"), [
    (None, None, False, Action.WRITE, "no kernel"),
    (stored(), None, False, Action.REPLACE, "older and not better"),
    (stored(speedup=1.5, device="cuda"), None, False, Action.KEEP, "a better kernel (1.50x vs eager on cuda"),
    (stored(speedup=1.5, device="cuda"), 1.2, False, Action.KEEP, "this run's: 1.20x"),
    (stored(speedup=1.5, device="cuda"), 1.5, False, Action.REPLACE, "not better"),
    (stored(speedup=1.5, device="cuda"), 1.7, False, Action.REPLACE, "not better"),
    (stored(created=T0 + timedelta(minutes=5)), 9.0, False, Action.KEEP, "a newer kernel"),
    (stored(created=T0), None, False, Action.KEEP, "after this run started"),  # same second: assume another run
    (stored(source_hash="sha256:old", speedup=3.0), None, False, Action.REPLACE, "older version of the op"),
    (StoredFacts(readable=False), None, False, Action.KEEP, "not a readable kernel"),
    (stored(speedup=3.0, created=T0 + timedelta(days=1)), None, True, Action.REPLACE, "--force"),
])
def test_the_decision_keeps_better_and_newer_kernels(facts, new_speedup, force, action, words):
    decision = decide(facts, NewFacts(HASH, new_speedup, T0), force)
    assert decision.action is action and words in decision.reason, decision


@pytest.fixture
def target(tmp_path) -> Target:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "ops.py").write_text(OPS)
    (op,) = discover(repo).ops
    return Target(op, repo)


def kernel_source(tag: str) -> str:
    return f"# {tag}\nfrom torch import nn\n\n\nclass ModelNew(nn.Module):\n    pass\n"


def test_install_writes_a_complete_kernel_and_refuses_a_newer_one(target):
    started = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(minutes=1)
    first = install_accepted_kernel(target, kernel_source("first"), VERDICT, "cpu", run_started=started.isoformat())
    assert first.written and first.decision.action is Action.WRITE
    [kernel] = find_kernels(target.repo_root)
    assert kernel.kernel_path.read_text() == kernel_source("first") and kernel.test_path.is_file()
    assert kernel.envelope["device_type"] == "cpu" and kernel.envelope["args"][0]["dims"][0] == {"min": 9, "max": 9}
    assert "TRITON_INTERPRET=1" in first.lines()[0]
    # a run that started before the first one wrote: the stored kernel is newer than what it found
    second = install_accepted_kernel(target, kernel_source("second"), VERDICT, "cpu", run_started=started.isoformat())
    assert not second.written and "a newer kernel" in second.lines("RUN")[0]
    assert second.lines("RUN")[0].endswith("kernelevo optimize --resume RUN --write-kernel --force")
    assert kernel.kernel_path.read_text() == kernel_source("first")
    forced = install_accepted_kernel(target, kernel_source("forced"), VERDICT, "cpu", run_started=started.isoformat(),
                                     force=True)
    assert forced.written and kernel.kernel_path.read_text() == kernel_source("forced")
    assert sorted(p.name for p in (target.repo_root / "kernels").iterdir()) == ["bias_relu"]  # no staging left


def test_two_concurrent_installs_never_interleave(target):
    """Both runs started before either wrote: exactly one kernel lands, whole, and the other is refused."""
    started = (datetime.now(timezone.utc) - timedelta(minutes=1)).isoformat(timespec="seconds")
    barrier = threading.Barrier(8)
    outcomes: dict[str, bool] = {}

    def install(tag: str) -> None:
        barrier.wait()
        outcomes[tag] = install_accepted_kernel(target, kernel_source(tag), VERDICT, "cpu",
                                                run_started=started).written

    threads = [threading.Thread(target=install, args=(f"run{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    [winner] = [tag for tag, written in outcomes.items() if written]
    assert len(outcomes) == 8
    kernel = read_kernel(target.repo_root / "kernels" / "bias_relu")
    assert kernel.kernel_path.read_text() == kernel_source(winner)
    assert sorted(p.name for p in (target.repo_root / "kernels").iterdir()) == ["bias_relu"]


def test_a_short_name_held_by_another_op_gets_the_long_name_with_a_matching_test(target):
    other = target.repo_root / "kernels" / "bias_relu"
    other.mkdir(parents=True)
    (other / "manifest.json").write_text(json.dumps({"op_id": "elsewhere.py::bias_relu"}))
    done = install_accepted_kernel(target, kernel_source("long"), VERDICT, "cpu",
                                   run_started="2026-01-01T00:00:00+00:00")
    assert done.directory.name == "ops_bias_relu"
    kernel = read_kernel(done.directory)
    assert kernel.op_id == "ops.py::bias_relu" and kernel.test_path.is_file()
    assert json.loads((other / "manifest.json").read_text())["op_id"] == "elsewhere.py::bias_relu"


def kernelevo_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "kernelevo.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


CALL = '''
import logging, sys
import torch
logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="%(name)s: %(message)s")
sys.path.insert(0, ".")
from ops import bias_relu
x, b = torch.randn(9, 128), torch.randn(128)
assert torch.equal(bias_relu(x, b), torch.relu(x + b))
'''


@pytest.mark.slow
def test_from_a_cpu_run_to_kernels_and_a_plain_program_that_calls_the_op(tmp_path):
    """The README's first job on a user's op: search on the CPU, install with the command the summary gives,
    call the op in a plain process (the original runs), then keep a better stored kernel unless --force."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "ops.py").write_text(OPS)
    runs = tmp_path / "runs"
    search = kernelevo_cli("optimize", "ops.py", "--device", "cpu", "--proposer", "offline", "--budget-candidates",
                           "2", "--quiet", "--runs-dir", str(runs), cwd=repo)
    assert search.returncode == 0, search.stdout + search.stderr
    [run_dir] = runs.iterdir()
    assert f"Best kernel: {run_dir / 'best' / 'kernel.py'}" in search.stdout
    next_command = f"kernelevo optimize --resume {run_dir} --write-kernel"
    assert next_command in search.stdout and not (repo / "kernels").exists()

    install = kernelevo_cli(*next_command.split()[1:], "--quiet", cwd=repo)
    assert install.returncode == 0, install.stdout + install.stderr
    directory = repo / "kernels" / "bias_relu"
    assert f"Wrote {directory}" in install.stdout and "kernelevo verify" in install.stdout
    assert (directory / "kernel.py").read_text() == (run_dir / "best" / "kernel.py").read_text()

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    call = subprocess.run([sys.executable, "-c", CALL], cwd=repo, env=env, capture_output=True, text=True,
                          timeout=300)
    assert call.returncode == 0, call.stderr[-3000:]
    assert "kernels/bias_relu is not used in this process" in call.stderr

    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["results"].update(geomean_speedup_vs_eager=1.8, device="cuda")  # as if a GPU run had stored it
    (directory / "manifest.json").write_text(json.dumps(manifest))
    kept = kernelevo_cli(*next_command.split()[1:], "--quiet", cwd=repo)
    assert kept.returncode == 0, kept.stderr
    assert f"Not written: {directory} already holds a better kernel (1.80x vs eager on cuda" in kept.stderr
    assert f"{next_command} --force" in kept.stderr
    assert json.loads((directory / "manifest.json").read_text()) == manifest

    forced = kernelevo_cli(*next_command.split()[1:], "--force", "--quiet", cwd=repo)
    assert forced.returncode == 0, forced.stderr
    assert f"Replaced (--force) {directory}" in forced.stdout
    assert json.loads((directory / "manifest.json").read_text())["results"]["geomean_speedup_vs_eager"] is None
