"""Out-of-bounds reads and writes of Triton kernels are caught on CPU (evaluator.sandboxed.bounds).

The interpreter reads host memory without complaint, and a value read out of bounds and then
discarded leaves the outputs right; on a GPU the same read faults or reads another allocation.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TASK = '''import torch
from torch import nn


class Model(nn.Module):
    """out[i] = x[i] + x[i + 1] (the last element has no neighbour)."""

    def forward(self, x):
        out = x.clone()
        out[:-1] += x[1:]
        return out


def get_inputs():
    return [torch.randn(1000)]


def get_init_inputs():
    return []


def get_small_cases():
    return [[torch.randn(1000)], [torch.randn(257)]]
'''

CANDIDATE = '''"""Shifted sum; {what}."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def shifted_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out[i] = x[i] + x[i + 1], with x[n] taken as 0."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    here = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    ahead = tl.load(x_ptr + offs + 1, mask={ahead_mask}, other=0.0)
    tl.store(out_ptr + offs, here + tl.where(offs + 1 < n, ahead, 0.0), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        shifted_sum_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
        return out
'''


@pytest.fixture()
def task(tmp_path: Path) -> Path:
    path = tmp_path / "shifted_sum.py"
    path.write_text(TASK)
    return path


def _candidate(tmp_path: Path, ahead_mask: str, what: str) -> Path:
    path = tmp_path / f"cand_{abs(hash(ahead_mask))}.py"
    path.write_text(CANDIDATE.format(ahead_mask=ahead_mask, what=what))
    return path


def test_a_discarded_read_past_the_end_is_incorrect(task, tmp_path):
    from evaluator import evaluate

    cand = _candidate(tmp_path, "offs < n", "reads x[n] on the last lane and discards it")
    verdict = evaluate(str(task), str(cand), device="cpu")
    assert verdict.verdict == "rejected" and verdict.reason == "incorrect", verdict.detail
    assert "shifted_sum_kernel read 1 element(s) outside every tensor argument" in verdict.detail
    assert "past the end of x_ptr" in verdict.detail


def test_the_same_kernel_masked_to_its_own_elements_is_accepted(task, tmp_path):
    from evaluator import evaluate

    cand = _candidate(tmp_path, "offs + 1 < n", "every read in bounds")
    verdict = evaluate(str(task), str(cand), device="cpu")
    assert verdict.accepted, f"{verdict.reason}: {verdict.detail}"


CHECKER_SCRIPT = textwrap.dedent('''
    import os
    os.environ["TRITON_INTERPRET"] = "1"
    import torch, triton, triton.language as tl
    from evaluator.sandboxed.bounds import BoundsChecker

    checker = BoundsChecker()
    checker.install()
    assert checker.installed

    @triton.jit
    def copy_kernel(x_ptr, out_ptr, n, SHIFT: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs + SHIFT, tl.load(x_ptr + offs - SHIFT, mask=offs < n), mask=offs < n)

    guarded = torch.randn(300)
    x, out = guarded[100:200], torch.empty(100)   # a view inside a larger buffer (guard regions)
    copy_kernel[(1,)](x, out, 100, SHIFT=0, BLOCK=128)
    assert checker.violations == [], checker.violations
    copy_kernel[(1,)](x, out, 100, SHIFT=2, BLOCK=128)
    print(checker.violations)
''')


def test_reads_before_a_view_and_writes_past_an_output_are_both_reported():
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", CHECKER_SCRIPT], cwd=root, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    outside = "element(s) outside every tensor argument"
    assert f"copy_kernel read 2 {outside} (8 bytes before the start of x_ptr)" in done.stdout
    assert f"copy_kernel wrote 2 {outside} (0 bytes past the end of out_ptr)" in done.stdout
