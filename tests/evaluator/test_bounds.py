"""Out-of-bounds reads and writes of Triton kernels are caught on CPU (evaluator.sandboxed.bounds).

The interpreter reads host memory without complaint, and a value read out of bounds and then
discarded leaves the outputs right; on a GPU the same read faults or reads another allocation.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
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
    from evaluator.sandboxed.bounds import BoundsChecker, OutOfBounds

    checker = BoundsChecker()
    checker.install()
    assert checker.installed

    @triton.jit
    def copy_kernel(x_ptr, out_ptr, n, READ_SHIFT: tl.constexpr, WRITE_SHIFT: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs - READ_SHIFT, mask=offs < n)
        tl.store(out_ptr + offs + WRITE_SHIFT, x, mask=offs < n)

    guarded = torch.randn(300)
    x = guarded[100:200]                       # a view inside a larger buffer (guard regions)
    beyond = torch.zeros(110)
    out = beyond[:100]                         # what lies past the output is memory a write could reach
    copy_kernel[(1,)](x, out, 100, READ_SHIFT=0, WRITE_SHIFT=0, BLOCK=128)
    assert checker.violations == [], checker.violations
    for read, write in ((2, 0), (0, 2)):
        try:
            copy_kernel[(1,)](x, out, 100, READ_SHIFT=read, WRITE_SHIFT=write, BLOCK=128)
        except Exception as exc:  # the interpreter wraps what its ops raise; the cause is the refusal
            if isinstance(exc.__cause__, OutOfBounds):
                print("stopped", read, write)
    print("performed" if bool(beyond[100:].any()) else "not performed")
    print(checker.violations)
''')


def test_reads_before_a_view_and_writes_past_an_output_are_refused_before_they_happen():
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", CHECKER_SCRIPT], cwd=root, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    outside = "element(s) outside every tensor argument"
    assert "stopped 2 0" in done.stdout and "stopped 0 2" in done.stdout, done.stdout
    assert "not performed" in done.stdout, done.stdout  # the launch stops at the access: the memory past is untouched
    assert f"copy_kernel read 2 {outside} (8 bytes before the start of x_ptr)" in done.stdout
    assert f"copy_kernel wrote 2 {outside} (0 bytes past the end of out_ptr)" in done.stdout


# --- the interpreter corrected where it is not a GPU (bf16 rounding, libdevice, host tensor descriptors) -----------

def _run_script(script: str) -> str:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _edge_f32_bits() -> np.ndarray:
    edges = [0x3F808000, 0x3F818000, 0x3F808001, 0x3F817FFF,  # ties to even (down, up), just above, just below
             0x7F7FFFFF, 0x7F7F8000, 0xFF7FFFFF,  # the largest floats round to infinity, as on a GPU
             0x00000001, 0x00008000, 0x00018000, 0x007FFFFF, 0x80008001,  # subnormals, ties among them
             0x7F800000, 0xFF800000, 0x00000000, 0x80000000,  # infinities, zeros
             0x7FC00000, 0x7F800001, 0xFFFFFFFF, 0x7FBFFFFF]  # NaNs, signalling ones whose top half is infinity
    random = np.random.default_rng(0).integers(0, 2**32, size=100_000, dtype=np.uint64)
    return np.concatenate([np.array(edges, dtype=np.uint64), random]).astype(np.uint32)


def test_f32_to_bf16_bits_is_eagers_round_to_nearest_even():
    import torch

    from evaluator.sandboxed.bounds import bf16_bits_to_f32, f32_to_bf16_bits

    bits = _edge_f32_bits()
    values = bits.view(np.float32)
    got = f32_to_bf16_bits(values)
    eager = torch.from_numpy(values.copy()).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    nan = np.isnan(values)
    assert np.array_equal(got[~nan], eager[~nan])
    assert np.isnan(bf16_bits_to_f32(got[nan])).all()  # NaN stays NaN (0x7F800001 must not become infinity)
    assert f32_to_bf16_bits(np.float32(1.0)).shape == ()  # a scalar handle stays a scalar
    every = np.arange(2**16, dtype=np.uint32).astype(np.uint16)
    widened = torch.from_numpy(every.view(np.int16).copy()).view(torch.bfloat16).float().numpy()
    assert np.array_equal(bf16_bits_to_f32(every).view(np.uint32)[~np.isnan(widened)],
                          widened.view(np.uint32)[~np.isnan(widened)])


BF16_CAST_SCRIPT = textwrap.dedent('''
    import os
    os.environ["TRITON_INTERPRET"] = "1"
    import numpy as np, torch, triton, triton.language as tl
    from evaluator.sandboxed.bounds import BoundsChecker

    checker = BoundsChecker()
    checker.install()

    @triton.jit
    def round_trip(x_ptr, rounded_ptr, widened_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        r = tl.load(x_ptr + offs, mask=mask).to(tl.bfloat16)       # an explicit cast
        tl.store(rounded_ptr + offs, r, mask=mask)
        tl.store(widened_ptr + offs, (r.to(tl.float32) * 1.0).to(tl.float32), mask=mask)

    @triton.jit
    def store_cast(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 1.0, mask=offs < n)  # cast by the store

    bits = torch.from_numpy(np.load(os.environ["BITS"]).view(np.int32))
    x = bits.view(torch.float32)
    rounded, widened = torch.empty(x.shape, dtype=torch.bfloat16), torch.empty(x.shape)
    round_trip[(triton.cdiv(x.numel(), 4096),)](x, rounded, widened, x.numel(), BLOCK=4096)
    eager = x.to(torch.bfloat16)
    nan = torch.isnan(eager)
    stored = torch.empty(64, dtype=torch.bfloat16)
    store_cast[(1,)](x[:64], stored, 64, BLOCK=64)
    print("explicit", torch.equal(rounded.view(torch.int16)[~nan], eager.view(torch.int16)[~nan]),
          bool(torch.isnan(rounded)[nan].all()))
    print("widened", torch.equal(widened[~nan], eager.float()[~nan]))
    print("store", torch.equal(stored[~nan[:64]].view(torch.int16), eager[:64][~nan[:64]].view(torch.int16)))
''')


def test_the_interpreters_bf16_casts_round_like_a_gpu(tmp_path):
    """A kernel rounding an intermediate to bf16 as eager does is bit-exact with eager on CPU (it was 1-2 ulps off:
    the interpreter truncates), through ``.to()`` and through a store into bf16 memory."""
    import os

    np.save(tmp_path / "bits.npy", _edge_f32_bits())
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", BF16_CAST_SCRIPT], cwd=root, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "BITS": str(tmp_path / "bits.npy")})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["explicit True True", "widened True", "store True"], done.stdout


LIBDEVICE_SCRIPT = textwrap.dedent('''
    import os
    os.environ["TRITON_INTERPRET"] = "1"
    import torch, triton, triton.language as tl
    from evaluator.sandboxed.bounds import BoundsChecker
    from evaluator.sandboxed.candidate import interpreter_limit

    checker = BoundsChecker()
    checker.install()
    from triton.language.extra import libdevice
    from triton.language.extra.cuda import libdevice as cuda_libdevice
    from triton.language.extra.libdevice import exp2

    @triton.jit
    def neutral(x_ptr, y_ptr):
        tl.store(y_ptr, libdevice.exp2(tl.load(x_ptr)))

    @triton.jit
    def cuda(x_ptr, y_ptr):
        tl.store(y_ptr, cuda_libdevice.exp2(tl.load(x_ptr)))

    @triton.jit
    def through_tl(x_ptr, y_ptr):
        tl.store(y_ptr, tl.extra.cuda.libdevice.rsqrt(tl.load(x_ptr)))

    @triton.jit
    def imported_name(x_ptr, y_ptr):
        tl.store(y_ptr, exp2(tl.load(x_ptr)))

    for kernel in (neutral, cuda, through_tl, imported_name):
        try:
            kernel[(1,)](torch.ones(1), torch.empty(1))
            print(kernel.__name__, "ran")
        except Exception as exc:
            print(kernel.__name__, interpreter_limit(exc))
''')


def test_every_way_to_reach_libdevice_is_an_interpreter_limit():
    """libdevice has no CPU implementation: each path to it fails as "needs --device cuda" (the neutral stubs used to
    return None, so the kernel died of an AttributeError: ``crashed``)."""
    out = _run_script(LIBDEVICE_SCRIPT)
    assert out.split("\n")[:4] == ["neutral libdevice math", "cuda libdevice math", "through_tl libdevice math",
                                   "imported_name libdevice math"], out


LIBDEVICE_SOFTMAX = '''"""Softmax with libdevice.exp2."""

import torch
import triton
import triton.language as tl
from torch import nn
from triton.language.extra import libdevice


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    e = libdevice.exp2((x - tl.max(x, axis=0)) * 1.4426950408889634)
    tl.store(y_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
        return y
'''


def test_a_libdevice_kernel_needs_a_gpu_on_cpu(tmp_path):
    from evaluator import NeedsGPU, evaluate

    cand = tmp_path / "softmax_libdevice.py"
    cand.write_text(LIBDEVICE_SOFTMAX)
    task = Path(__file__).resolve().parents[1] / "tasks" / "softmax.py"
    with pytest.raises(NeedsGPU, match="libdevice math.*--device cuda"):
        evaluate(str(task), str(cand), device="cpu")


DESCRIPTOR_SCRIPT = textwrap.dedent('''
    import os
    os.environ["TRITON_INTERPRET"] = "1"
    import torch, triton, triton.language as tl
    from triton.tools.tensor_descriptor import TensorDescriptor
    from evaluator.sandboxed.bounds import BoundsChecker

    checker = BoundsChecker()
    checker.install()

    @triton.jit
    def tile_copy(x_desc, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
        rows, cols = tl.arange(0, BM), tl.arange(0, BN)
        tile = x_desc.load([tl.program_id(0) * BM, 0])
        tl.store(out_ptr + (tl.program_id(0) * BM + rows[:, None]) * BN + cols[None, :], tile)

    @triton.jit
    def pair_sum(pair, out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(pair[0] + offs) + tl.load(pair[1] + offs))

    guarded = torch.randn(64 * 16 + 128)
    x = guarded[64:64 + 64 * 16].view(64, 16)           # a view inside a larger buffer (guard regions)
    out = torch.empty(64, 16)
    tile_copy[(4,)](TensorDescriptor.from_tensor(x, block_shape=[16, 16]), out, BM=16, BN=16)
    print("from_tensor", checker.violations, torch.equal(out, x))
    too_tall = TensorDescriptor(x, shape=[68, 16], strides=[16, 1], block_shape=[16, 16])
    try:
        tile_copy[(5,)](too_tall, torch.empty(80, 16), BM=16, BN=16)   # rows 64..67 lie past the end of x
    except Exception:  # the access is refused before it happens: the launch stops there
        pass
    print("too_tall", checker.violations)
    checker.violations.clear()
    a, b, total = torch.randn(32), torch.randn(32), torch.empty(32)
    pair_sum[(1,)]((a, b), total, BLOCK=32)
    print("tuple", checker.violations, torch.equal(total, a + b))
''')


def test_host_tensor_descriptors_are_bounded_by_their_base_tensor():
    """A host TensorDescriptor's loads are checked against its base tensor: a descriptor over a tensor is in bounds
    (it used to read "outside every tensor argument"), one whose shape overhangs its base is not."""
    out = _run_script(DESCRIPTOR_SCRIPT).split("\n")
    assert out[0] == "from_tensor [] True", out
    assert "tile_copy read 64 element(s) outside every tensor argument" in out[1], out
    assert "past the end of x_desc.base" in out[1], out
    assert out[2] == "tuple [] True", out


BF16_MATMUL_TASK = '''import torch
from torch import nn


class Model(nn.Module):
    def forward(self, a, b):
        return a @ b


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(32, 48, dtype=torch.bfloat16), torch.randn(48, 16, dtype=torch.bfloat16)]
'''

BF16_DOT = '''import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    ks = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rows * K + k + ks[None, :], mask=(rows < M) & (k + ks[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + ks[:, None]) * N + cols, mask=(k + ks[:, None] < K) & (cols < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rows * N + cols, acc.to(tl.bfloat16), mask=(rows < M) & (cols < N))


class ModelNew(nn.Module):
    def forward(self, a, b):
        a, b = a.contiguous(), b.contiguous()
        m, k = a.shape
        n = b.shape[1]
        c = torch.empty(m, n, device=a.device, dtype=a.dtype)
        matmul_kernel[(triton.cdiv(m, 16),)](a, b, c, m, n, k, BM=16, BN=triton.next_power_of_2(n), BK=16)
        return c
'''


def test_a_bf16_dot_kernel_needs_a_gpu_on_cpu(tmp_path):
    """The interpreter multiplies bf16 tiles in ``tl.dot`` as raw bits (results off by orders of magnitude): an
    honest bf16 matmul is "needs --device cuda" on a CPU, never ``incorrect``."""
    from evaluator import NeedsGPU, evaluate

    task, cand = tmp_path / "bf16_matmul.py", tmp_path / "bf16_dot.py"
    task.write_text(BF16_MATMUL_TASK)
    cand.write_text(BF16_DOT)
    with pytest.raises(NeedsGPU, match="bfloat16 values.*--device cuda"):
        evaluate(str(task), str(cand), device="cpu")
