"""Tolerance logic: per-dtype bounds plus relative error, constant-output and NaN/Inf position checks."""

import math

import pytest
import torch

from evaluator.sandboxed.compare import Tolerance, compare, relative_l2, tolerance_for, widened


def test_default_tolerances_follow_kernelbench_per_dtype():
    assert tolerance_for(torch.float32) == Tolerance(1e-4, 1e-4, 1e-5)
    assert tolerance_for(torch.float16).atol == tolerance_for(torch.bfloat16).atol == 1e-2
    assert tolerance_for(torch.int8) == Tolerance(0.0, 0.0, 0.0)


def test_task_override_wins_and_eager_error_widens_relative_bound():
    assert tolerance_for(torch.float32, {"atol": 1e-3}).atol == 1e-3
    assert tolerance_for(torch.bfloat16, eager_rel_err=0.02).rel == pytest.approx(0.04)
    assert tolerance_for(torch.bfloat16, eager_rel_err=1e-4).rel == 1e-2  # never tighter than the default
    assert tolerance_for(torch.float32, eager_rel_err=float("nan")).rel == 1e-5
    # eager overflowed on some seed (sum of exp over large values): no widening, and a finite bound for the verdict
    assert tolerance_for(torch.float32, eager_rel_err=float("inf")).rel == 1e-5



def test_eager_error_on_the_very_inputs_widens_the_norm_bound_too():
    # GELU's negative tail in fp32: 1 + erf(x) cancels, so eager PyTorch itself is off by ~1e-4 norm-wise on an
    # all-negative input set (a near-duplicate with every sign flipped), far past the case's 1e-5
    x = -3.5 + 0.5 * torch.randn(33, 512, generator=torch.Generator().manual_seed(0))
    ref = torch.nn.functional.gelu(x.double())
    eager = torch.nn.functional.gelu(x)
    base = tolerance_for(torch.float32)
    assert not compare(eager, ref, base).ok
    tol = widened(base, eager, ref)
    assert tol.rel == pytest.approx(2 * relative_l2(eager, ref)) and compare(eager, ref, tol).ok
    # as inexact as eager, twice over, never more
    worse = (ref + (eager.double() - ref) * 3).float()
    assert "relative error" in compare(worse, ref, tol).problem
    # eager exact: the bound stays the case's
    assert widened(base, ref.float(), ref).rel == base.rel

def test_exact_answer_passes_with_zero_error():
    ref = torch.randn(64, 33, dtype=torch.float64)
    result = compare(ref.float(), ref, tolerance_for(torch.float32))
    assert result.ok and result.mismatched == 0 and result.rel_l2_err < 1e-7


def test_all_zeros_on_tiny_outputs_fail_the_relative_check():
    ref = torch.randn(256, dtype=torch.float64) * 1e-6  # every element is inside atol=1e-4
    result = compare(torch.zeros(256), ref, tolerance_for(torch.float32))
    assert not result.ok and "relative error" in result.problem


def test_nan_is_not_a_wildcard():
    ref = torch.randn(32, dtype=torch.float64)
    out = torch.full((32,), float("nan"))
    result = compare(out, ref, tolerance_for(torch.float32))
    assert not result.ok and "NaN" in result.problem


def test_inf_positions_must_match_reference_rounded_to_output_dtype():
    ref = torch.tensor([1.0, 70000.0, -70000.0], dtype=torch.float64)  # overflows float16
    good = ref.to(torch.float16)
    assert compare(good, ref, tolerance_for(torch.float16)).ok
    bad = torch.tensor([1.0, 65504.0, -math.inf], dtype=torch.float16)
    assert "+Inf" in compare(bad, ref, tolerance_for(torch.float16)).problem


def test_constant_output_rejected_when_reference_varies():
    ref = torch.linspace(1.0, 2.0, 100, dtype=torch.float64)
    out = torch.full((100,), 1.5)
    loose = Tolerance(atol=1.0, rtol=1.0, rel=0.25)  # a task this loose: each element and the norm pass
    result = compare(out, ref, loose)
    assert not result.ok and "constant" in result.problem


def test_a_constant_matching_a_reference_flat_within_the_tolerance_is_correct():
    """Cosine similarities of nearly parallel rows: all within 1e-7 of 1, so fp32 gives one value for all."""
    ref = 1.0 - torch.linspace(0.0, 1e-7, 100, dtype=torch.float64)
    assert compare(torch.ones(100), ref, tolerance_for(torch.float32)).ok


def test_elementwise_bound_reports_worst_element():
    ref = torch.zeros(10, dtype=torch.float64)
    out = torch.zeros(10)
    out[3] = 0.5
    result = compare(out, ref, tolerance_for(torch.float32))
    assert not result.ok and result.mismatched == 1 and "got 0.5" in result.problem


def test_precision_downgrade_is_caught_by_the_relative_bound():
    ref = torch.randn(4096, dtype=torch.float64)
    downgraded = ref.to(torch.bfloat16).to(torch.float32)  # fp32 op computed in bf16
    result = compare(downgraded, ref, tolerance_for(torch.float32))
    assert not result.ok


def test_shape_mismatch_and_integer_exactness():
    assert "shape" in compare(torch.zeros(3), torch.zeros(4, dtype=torch.float64), tolerance_for(torch.float32)).problem
    ref = torch.tensor([1, 2, 3], dtype=torch.int8)
    assert compare(ref.clone(), ref, tolerance_for(torch.int8)).ok
    assert not compare(torch.tensor([1, 2, 4], dtype=torch.int8), ref, tolerance_for(torch.int8)).ok


def test_relative_l2_of_zero_reference():
    zero = torch.zeros(4, dtype=torch.float64)
    assert relative_l2(zero, zero) == 0.0
    assert relative_l2(torch.ones(4), zero) == math.inf
