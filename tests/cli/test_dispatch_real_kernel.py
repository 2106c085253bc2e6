"""A real Triton kernel verified on the CPU, installed in ``kernels/<op>/``, must not crash the user's program:
in a plain Python process (no ``TRITON_INTERPRET``) Triton has no CPU driver, so the op runs its original code
and says so at debug level; where Triton runs interpreted (as in the verifier) the kernel itself runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kernelevo.discovery import discover
from kernelevo.dispatch_where import RuntimeFacts, triton_interpreted, unavailable_reason
from kernelevo.kernel_store import envelope_from_cases, write_kernel

ROOT = Path(__file__).parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "repos" / "verify"  # ops/scale.py::scale_shift, y = 2x + 1

# A real Triton kernel of the op, plus 100 so that the caller can tell which path ran.
MARKED_KERNEL = '''
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _scale_shift(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * 2.0 + 1.0 + 100.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _scale_shift[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
        return y
'''

CALL_THE_OP = '''
import json, logging, sys
import torch
logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="%(name)s: %(message)s")
sys.path.insert(0, sys.argv[1])
from ops.scale import scale_shift

x = torch.randn(4, 37)  # a verified shape
y = scale_shift(x)
ran = "kernel" if torch.allclose(y, x * 2 + 1 + 100) else "original" if torch.allclose(y, x * 2 + 1) else "wrong"
print(json.dumps({"ran": ran}))
'''


def call_in_a_fresh_process(repo: Path, interpret: bool) -> tuple[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "KERNELEVO_DISABLE")}
    env["PYTHONPATH"] = str(ROOT)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    done = subprocess.run([sys.executable, "-c", CALL_THE_OP, str(repo)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])["ran"], done.stderr


@pytest.fixture
def repo_with_a_cpu_verified_triton_kernel(tmp_path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo)
    (op,) = [o for o in discover(repo).ops if o.qualname == "scale_shift"]
    envelope = envelope_from_cases([(torch.randn(4, 37),), (torch.randn(3, 64),)], device_type="cpu",
                                   capabilities=None, backend="triton")  # what a CPU search records
    write_kernel(repo, op, MARKED_KERNEL, {"verdict": "accepted", "reason": "ok"}, envelope)
    return repo


@pytest.mark.slow
def test_without_the_interpreter_the_original_runs_and_says_so_at_debug_level(repo_with_a_cpu_verified_triton_kernel):
    ran, log = call_in_a_fresh_process(repo_with_a_cpu_verified_triton_kernel, interpret=False)
    assert ran == "original", log
    assert "active drivers" not in log
    assert ("kernelevo.dispatch: ops/scale.py::scale_shift: kernels/scale_shift is not used in this process: it was "
            "verified on the cpu under the Triton interpreter") in log
    assert "running the original code" in log


@pytest.mark.slow
def test_where_triton_is_interpreted_the_kernel_runs(repo_with_a_cpu_verified_triton_kernel):
    ran, log = call_in_a_fresh_process(repo_with_a_cpu_verified_triton_kernel, interpret=True)
    assert ran == "kernel", log
    assert "using kernels/scale_shift inside its verified envelope (device cpu)" in log


def facts(interpreted: bool, *capabilities: tuple[int, int]) -> RuntimeFacts:
    return RuntimeFacts(triton_interpreted=interpreted, cuda_capabilities=lambda: tuple(capabilities))


@pytest.mark.parametrize(("envelope", "here", "words"), [
    ({"device_type": "cpu", "backend": "triton"}, facts(True), None),
    ({"device_type": "cpu", "backend": "triton"}, facts(False), "TRITON_INTERPRET=1 is not set"),
    ({"device_type": "cpu", "backend": "cuda"}, facts(True), "no CPU runtime"),
    ({"device_type": "cuda", "backend": "triton", "capabilities": None}, facts(False, (9, 0)), None),
    ({"device_type": "cuda", "backend": "triton", "capabilities": [[9, 0]]}, facts(False, (8, 0), (9, 0)), None),
    ({"device_type": "cuda", "backend": "triton", "capabilities": [[9, 0]]}, facts(False, (8, 0)),
     "verified on capabilities [(9, 0)], and this process's devices have [(8, 0)]"),
    ({"device_type": "cuda", "backend": "triton"}, facts(False), "no usable CUDA device"),
    ({"device_type": "cuda", "backend": "triton"}, facts(True, (9, 0)), "runs Triton interpreted"),
    ({"device_type": "cuda", "backend": "cuda"}, facts(True, (9, 0)), None),  # NVRTC kernels need no Triton
    ({"device_type": "mps", "backend": "triton"}, facts(True), "does not dispatch to"),
])
def test_a_kernel_is_used_only_where_it_was_verified_and_can_run(envelope, here, words):
    reason = unavailable_reason(envelope, here)
    assert reason is None if words is None else words in (reason or ""), reason


def test_the_interpreter_switch_reads_like_tritons_own(monkeypatch):
    monkeypatch.delitem(sys.modules, "triton", raising=False)
    assert triton_interpreted({"TRITON_INTERPRET": "True"}) and triton_interpreted({"TRITON_INTERPRET": "1"})
    assert not triton_interpreted({"TRITON_INTERPRET": "0"}) and not triton_interpreted({})
