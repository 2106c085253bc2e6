"""On a GPU: the shim records a candidate's Triton kernel, torch's own kernels and work on a side stream, and the
judge tells them apart (bench/tracing_probe.py measures more, and the overhead)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator.tracing.build import BuildError, build_shim
from evaluator.tracing.judge import Expected, FindingKind, policy_for
from evaluator.tracing.judge import judge as judge_trace
from evaluator.tracing.reader import TraceChannel
from evaluator.tracing.records import KernelRecord, StartFlag, StartRecord

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]

CANDIDATE = '''
import triton
import triton.language as tl


@triton.jit
def traced_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def add(x, y, out):
    traced_add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
'''

CHILD = """
import importlib, json, os, sys
sys.path.insert(0, sys.argv[2])
from evaluator.tracing import client, tags
tracer = client.bind(sys.argv[1])
import torch
sys.path.insert(0, sys.argv[3])
add = importlib.import_module("traced_candidate").add
x = torch.randn(1 << 16, device="cuda"); y = torch.randn_like(x); out = torch.empty_like(x)
a = torch.randn(2048, 2048, device="cuda")  # real work: far above the bookkeeping allowance
add(x, y, out); torch.softmax(a, -1); torch.cuda.synchronize()
stream = torch.cuda.current_stream().cuda_stream
side = torch.cuda.Stream()
def window(k, body):
    torch.cuda.synchronize()
    tracer.mark(tags.mark_tag(tags.WindowKind.FORWARD, tags.Edge.BEGIN, k), stream)
    body()
    torch.cuda.synchronize()
    tracer.mark(tags.mark_tag(tags.WindowKind.FORWARD, tags.Edge.END, k), stream)
def on_side():
    with torch.cuda.stream(side):
        add(x, y, out)
window(0, lambda: add(x, y, out))
window(1, lambda: (add(x, y, out), torch.softmax(a, -1)))
window(2, on_side)
print(json.dumps({"status": tracer.status(), "flush": tracer.flush()}))
"""


def test_the_judge_sees_what_ran_on_the_gpu(tmp_path: Path):
    built = build_shim(tmp_path / "cache")
    assert not isinstance(built, BuildError), str(built)
    (tmp_path / "traced_candidate.py").write_text(CANDIDATE)
    channel = TraceChannel.open(built.library, built.cupti_library, os.path.realpath(sys.executable))
    env = {**os.environ, **channel.child_env()}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(built.library), str(ROOT), str(tmp_path)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=channel.child_fds())
    reader = channel.start_reading()
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode()[-3000:]
    assert reader.wait_ended(60)
    snap = reader.snapshot()
    reader.close()
    result = json.loads(out.decode().strip().splitlines()[-1])
    assert result["status"] is True and snap.tampered is None
    (start,) = [r for r in snap.records if isinstance(r, StartRecord)]
    assert start.flags & StartFlag.ACTIVE and start.flags & StartFlag.LATENCY
    assert any(isinstance(r, KernelRecord) and r.name == "traced_add_kernel" and r.queued for r in snap.records)
    policy, impersonating = policy_for(CANDIDATE)
    assert impersonating == []
    verdict = judge_trace(snap.records, policy, Expected(forward=(0, 1, 2)))
    by_window = {}
    for finding in verdict.findings:
        if finding.window is not None:
            by_window.setdefault(finding.window.index, set()).add(finding.kind)
    assert 0 not in by_window, verdict.findings
    assert by_window[1] == {FindingKind.FOREIGN_KERNELS}
    assert by_window[2] == {FindingKind.OFF_STREAM}
    assert all(w.stream_id is not None for w in verdict.windows)
