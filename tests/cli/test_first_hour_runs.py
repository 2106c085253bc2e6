"""The CLI's runs as a first-time user sees them, each through the real ``kernelevo`` executable: plain progress
lines in a log (no terminal) with the summary set apart; ``.github/kernelevo.yml`` budgets honoured (flags win);
the resume hint after Ctrl-C printed after the live panel stops (under a real pseudo-terminal); dispatch seen
with ``kernelevo.explain`` and ``KERNELEVO_LOG=dispatch``, warnings pointing at the user's line; and the README's
first command's job end to end on the CPU, its kernel then called in a fresh process."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from kernelevo.discovery import discover
from kernelevo.kernel_store import envelope_from_cases, write_kernel

ROOT = Path(__file__).parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "repos" / "verify"  # ops/scale.py::scale_shift: y = 2x + 1
EXAMPLE = ROOT / "kernelevo" / "examples" / "rms_norm.py"  # what `kernelevo optimize` searches with no PATH
KERNELEVO = [sys.executable, "-m", "kernelevo.cli"]

pytestmark = pytest.mark.slow


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRITON_INTERPRET", "KERNELEVO_DISABLE", "KERNELEVO_LOG", "KERNELEVO_RUNS_DIR")}
    env["PYTHONPATH"] = str(ROOT)
    return {**env, **extra}


def kernelevo(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """The CLI as CI runs it: no terminal, stdout and stderr merged into one log."""
    return subprocess.run([*KERNELEVO, *args], cwd=cwd, env=environment(**env), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    (root / ".git").mkdir()
    return root


def test_in_a_log_progress_is_plain_lines_and_the_summary_stands_apart(repo):
    (repo / ".github").mkdir()
    (repo / ".github" / "kernelevo.yml").write_text("budgets:\n  candidates: 2\n")
    done = kernelevo("optimize", "ops/scale.py", "--device", "cpu", "--runs-dir", "runs", cwd=repo)
    log = done.stdout
    assert done.returncode == 0, log
    assert "╭" not in log and "\x1b[" not in log  # no panel, no terminal control codes
    progress = [line for line in log.splitlines() if line.startswith("kernelevo optimize ops/scale.py::")]
    assert any(": candidate g0-" in line and "evaluated" in line for line in progress), log
    assert progress[-1].startswith("kernelevo optimize ops/scale.py::scale_shift: stopped (budget_candidates)")
    summary = log.index("ops/scale.py::scale_shift: stopped (budget_candidates) after 2 candidates")
    assert log[:summary].endswith("\n\n"), log  # a blank line between the progress and the summary
    assert "Verified on cpu for exactly 2 case(s): (float32[4, 37]); (float32[3, 64])." in log
    assert "On the CPU only the op's small_inputs were checked" in log

    flag_wins = kernelevo("optimize", "ops/scale.py", "--device", "cpu", "--runs-dir", "runs",
                          "--budget-candidates", "1", "--json-lines", cwd=repo)
    assert flag_wins.returncode == 0, flag_wins.stdout
    result = next(json.loads(line) for line in flag_wins.stdout.splitlines() if '"event": "result"' in line)
    assert result["candidates_evaluated"] == 1 and result["stop_reason"] == "budget_candidates"


def test_the_resume_hint_after_ctrl_c_is_printed_after_the_live_panel_stops(repo):
    """On a terminal the panel redraws itself over what is printed while it is live: the hint must come after
    the panel's last frame, with no cursor movement after it. The proposer is an LLM endpoint that never answers
    (the loopback fake, holding every request), so the search cannot end before the Ctrl-C, whenever it lands; and
    the run must still exit at once (a request blocked on the network held the exit for its whole timeout)."""
    import pty

    from tests.fakes.openai_server import FakeOpenAI, Step

    leader, follower = pty.openpty()
    endpoint = FakeOpenAI([Step(delay_s=3600)])
    endpoint.__enter__()
    proc = subprocess.Popen([*KERNELEVO, "optimize", "ops/scale.py", "--device", "cpu", "--runs-dir", "runs",
                             "--budget-candidates", "1000", "--plateau", "1000"], cwd=repo,
                            env=environment(TERM="xterm-256color", COLUMNS="100", LINES="40",
                                            KERNELEVO_LLM_BASE_URL=endpoint.base_url,
                                            KERNELEVO_LLM_MODEL="fake-model", KERNELEVO_LLM_API_KEY="sk-test",
                                            KERNELEVO_LLM_TIMEOUT_S="3600"),  # a held request never times out
                            stdin=follower, stdout=follower, stderr=follower, start_new_session=True)
    os.close(follower)
    chunks: list[bytes] = []
    panel_live = threading.Event()

    def read() -> None:
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                return
            if not data:
                return
            chunks.append(data)
            if b"kernelevo optimize ops/scale.py" in b"".join(chunks):  # the panel's title: it is live
                panel_live.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert panel_live.wait(timeout=300), b"".join(chunks).decode(errors="replace")[-3000:]
        deadline = time.monotonic() + 300  # a bound against a hang, not a timing assertion
        while not endpoint.requests and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)  # the search waits on the endpoint from here on: it cannot end by itself
        assert endpoint.requests and proc.poll() is None, b"".join(chunks).decode(errors="replace")[-3000:]
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: the terminal's foreground process group
        # the requests still held by the endpoint must not hold the exit (they would for the hour of their timeout;
        # the bound only keeps a regression from hanging the suite)
        returncode = proc.wait(timeout=300)
        assert returncode == 130, b"".join(chunks).decode(errors="replace")[-3000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        endpoint.__exit__(None, None, None)
    reader.join(timeout=60)
    os.close(leader)
    text = b"".join(chunks).decode(errors="replace")
    hint = text.rfind("continue with: kernelevo optimize --resume runs/")
    assert hint != -1, text[-3000:]
    assert text.rfind("╰") < hint, text[-3000:]  # the panel's last frame is above the hint
    after = text[hint:]
    assert not re.search(r"\x1b\[\d*[AFK]", after), repr(after)  # nothing moves up over it or erases it
    run_dir = re.search(r"--resume (runs/\S+)", after)
    assert run_dir is not None and (repo / run_dir.group(1).strip() / "run.json").is_file()


# A real Triton kernel of scale_shift, plus 100 so that a caller can tell which path ran.
MARKED_KERNEL = '''
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _scale_shift(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + 101.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _scale_shift[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
        return y
'''

USER_PROGRAM = '''import torch

import kernelevo
from ops.scale import scale_shift

inside, outside = torch.randn(4, 37), torch.randn(100, 100)
print("EXPLAIN-IN", kernelevo.explain(scale_shift, inside).dispatches)
print("EXPLAIN-OUT", kernelevo.explain(scale_shift, outside).dispatches)
print(kernelevo.explain(scale_shift, outside))
ran = scale_shift(inside)
print("RAN", "kernel" if torch.allclose(ran, inside * 2 + 101) else "original")
scale_shift(outside)  # the warning must name this line of this file
'''


def test_dispatch_is_visible_with_explain_and_the_log_and_warnings_point_at_the_callers_line(repo):
    (op,) = [o for o in discover(repo).ops if o.qualname == "scale_shift"]
    envelope = envelope_from_cases([(torch.randn(4, 37),), (torch.randn(3, 64),)], device_type="cpu",
                                   capabilities=None, backend="triton")
    write_kernel(repo, op, MARKED_KERNEL, {"verdict": "accepted", "reason": "ok"}, envelope)
    program = repo / "main.py"
    program.write_text(USER_PROGRAM)
    warned_line = USER_PROGRAM.splitlines().index("scale_shift(outside)  # the warning must name this line of "
                                                  "this file") + 1
    done = subprocess.run([sys.executable, "-W", "always", str(program)], cwd=repo, capture_output=True, text=True,
                          env=environment(TRITON_INTERPRET="1", KERNELEVO_LOG="dispatch"), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out, err = done.stdout, done.stderr
    assert "EXPLAIN-IN True" in out and "EXPLAIN-OUT False" in out and "RAN kernel" in out
    assert "ops/scale.py::scale_shift: ready:" in out and "argument 0: tensor float32 [3..4, 37..64]" in out
    assert "this call: runs the original code: argument 0 dim 0 is 100, verified 3..4" in out
    assert "kernelevo.dispatch: ops/scale.py::scale_shift: using kernels/scale_shift inside its verified" in err
    assert "kernelevo.dispatch: ops/scale.py::scale_shift: a call ran kernels/scale_shift" in err
    assert f"{program}:{warned_line}: KernelEvoWarning: scale_shift: argument 0 dim 0 is 100" in err, err

    plain = subprocess.run([sys.executable, str(program)], cwd=repo, capture_output=True, text=True,
                           env=environment(), timeout=300)  # no interpreter, no log: quiet, original code
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert "RAN original" in plain.stdout and "unavailable: kernels/scale_shift is not used" in plain.stdout
    assert "kernelevo.dispatch:" not in plain.stderr


CALL_RMS_NORM = '''import json, sys
import torch
import kernelevo
sys.path.insert(0, sys.argv[1])
from rms_norm import rms_norm

x, w = torch.randn(5, 123), torch.randn(123)  # a verified shape
y = rms_norm(x, w)
reference = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)) * w
print(json.dumps({"dispatches": kernelevo.explain(rms_norm, x, w).dispatches,
                  "correct": bool(torch.allclose(y, reference, atol=1e-5, rtol=1e-5))}))
'''


def test_the_readme_first_command_job_on_cpu_then_the_op_runs_its_kernel_in_a_fresh_process(tmp_path):
    """``kernelevo optimize --device cpu`` searches the bundled RMSNorm; here a copy of it in a fresh directory,
    so that ``--write-kernel`` installs into that directory and not into the package."""
    work = tmp_path / "project"
    work.mkdir()
    (work / ".git").mkdir()
    shutil.copy(EXAMPLE, work / "rms_norm.py")
    done = kernelevo("optimize", "rms_norm.py", "--device", "cpu", "--write-kernel", cwd=work)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "rms_norm.py::rms_norm: stopped (" in done.stdout and "Wrote " in done.stdout
    assert "The kernel hard-codes 1e-06" in done.stdout  # the op's eps, fixed in the generated kernel
    assert (work / "kernels" / "rms_norm" / "kernel.py").is_file() and (work / "runs").is_dir()

    call = subprocess.run([sys.executable, "-c", CALL_RMS_NORM, str(work)], cwd=work, capture_output=True,
                          text=True, env=environment(TRITON_INTERPRET="1", KERNELEVO_LOG="dispatch"), timeout=300)
    assert call.returncode == 0, call.stderr[-3000:]
    assert json.loads(call.stdout.strip().splitlines()[-1]) == {"dispatches": True, "correct": True}
    assert "kernelevo.dispatch: rms_norm.py::rms_norm: a call ran kernels/rms_norm" in call.stderr, call.stderr


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the swallowed interrupt itself
def test_a_ctrl_c_that_lands_in_a_finaliser_is_remembered():
    """Python only prints an exception raised while a finaliser runs: the Ctrl-C must still end the search (the
    flag is its should_cancel) and the run must end as interrupted."""
    import gc

    from kernelevo.commands.optimize_cmd import _ctrl_c

    class Finalised:
        def __del__(self) -> None:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10_000):  # the handler runs between bytecodes, inside this finaliser
                pass

    interrupted = threading.Event()
    before = signal.getsignal(signal.SIGINT)
    with _ctrl_c(interrupted):
        Finalised()  # dropped at once: its __del__ runs here and swallows the KeyboardInterrupt
        gc.collect()
    assert interrupted.is_set()
    assert signal.getsignal(signal.SIGINT) is before
