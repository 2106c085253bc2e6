"""Comparing a candidate's output with the reference: tolerances and the checks on top of them.

Per-dtype ``allclose`` tolerances alone are not enough (an all-zero output passes ``atol=1e-4`` when
the true values are tiny, and NaN can act as a wildcard in careless comparisons), so every output must
also pass a norm-wise relative error bound, a not-near-constant check, and exact agreement of the
NaN/+Inf/-Inf positions with the reference rounded to the output's dtype.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import torch

# dtype -> (atol, rtol, rel): allclose bounds as KernelBench uses them, plus ||out-ref|| / ||ref||.
_DEFAULTS: dict[torch.dtype, tuple[float, float, float]] = {
    torch.float64: (1e-7, 1e-7, 1e-9),
    torch.float32: (1e-4, 1e-4, 1e-5),
    torch.float16: (1e-2, 1e-2, 2e-3),
    torch.bfloat16: (1e-2, 1e-2, 1e-2),
}


@dataclass(frozen=True)
class Tolerance:
    """Bounds an output must meet: elementwise ``|out-ref| <= widen * (atol + rtol*|ref|)`` and
    ``||out-ref|| / ||ref|| <= rel``. ``widen`` (>= 1) is derived from eager PyTorch's own error on the same
    inputs (:func:`widened`): a kernel may be as inexact as the op it replaces, twice over, never more."""

    atol: float
    rtol: float
    rel: float
    widen: float = 1.0


def normalized_error(out: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> float:
    """``max |out-ref| / (atol + rtol*|ref|)`` over the entries where the reference is finite (0: exact)."""
    if out.is_complex() and ref.is_complex() and out.shape == ref.shape:
        return normalized_error(torch.view_as_real(out.resolve_conj()), torch.view_as_real(ref.resolve_conj()), tol)
    if not out.is_floating_point() or out.shape != ref.shape:
        return 0.0
    r = ref.double()
    finite = torch.isfinite(r) & torch.isfinite(out.double())
    if not bool(finite.any()):
        return 0.0
    bound = tol.atol + tol.rtol * r[finite].abs()
    return float(((out.double()[finite] - r[finite]).abs() / bound.clamp_min(1e-300)).max())


def widened(tol: Tolerance, eager: torch.Tensor, ref: torch.Tensor, factor: float = 2.0) -> Tolerance:
    """``tol`` widened so that eager PyTorch, on these very inputs, would pass it with ``factor`` to spare, element
    by element and norm-wise (its bf16 rounding of a rotary embedding is off by far more than 1e-2 on some elements,
    and a more accurate kernel must not be refused for that)."""
    error = normalized_error(eager, ref, tol)
    if not math.isfinite(error):  # eager itself overflowed: no widening from it
        return tol
    rel = relative_l2(eager, ref) if eager.is_floating_point() and eager.shape == ref.shape else 0.0
    # the norm-wise bound too: an input set the case's own draws never made (a near-duplicate with every sign
    # flipped: GELU's tail, where fp32's 1 + erf cancels) may leave eager PyTorch far less exact than they did
    rel = max(tol.rel, factor * rel) if math.isfinite(rel) else tol.rel
    return Tolerance(tol.atol, tol.rtol, rel, max(tol.widen, factor * error, 1.0))


def tolerance_for(dtype: torch.dtype, override: dict[str, float] | None = None,
                  eager_rel_err: float | None = None) -> Tolerance:
    """The tolerance for an output dtype.

    The task's own ``TOLERANCE`` wins. Otherwise the defaults above, with the relative bound widened to
    twice the error of eager PyTorch in the same dtype when that is larger (long low-precision
    reductions), so a kernel must be at least nearly as accurate as the op it replaces.
    """
    if dtype.is_complex:  # judged on its real and imaginary parts (see compare)
        dtype = torch.empty(0, dtype=dtype).real.dtype
    if dtype.is_floating_point:
        atol, rtol, rel = _DEFAULTS.get(dtype, _DEFAULTS[torch.float32])
    else:
        atol, rtol, rel = 0.0, 0.0, 0.0
    if eager_rel_err is not None and math.isfinite(eager_rel_err):  # eager overflowed: no widening from it
        rel = max(rel, 2.0 * eager_rel_err)
    override = override or {}
    return Tolerance(
        atol=float(override.get("atol", atol)),
        rtol=float(override.get("rtol", rtol)),
        rel=float(override.get("rel", rel)),
    )


@dataclass
class Comparison:
    """The outcome of comparing one output tensor with its reference."""

    ok: bool
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    rel_l2_err: float = 0.0
    mismatched: int = 0
    problem: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def relative_l2(out: torch.Tensor, ref: torch.Tensor) -> float:
    """``||out - ref|| / ||ref||`` in float64 over finite reference entries (0 when both are zero)."""
    finite = torch.isfinite(ref)
    diff = (out.double() - ref.double())[finite]
    denom = ref.double()[finite].norm()
    num = diff.norm()
    if denom == 0:
        return 0.0 if num == 0 else float("inf")
    return float(num / denom)


def compare(out: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> Comparison:
    """Compare a candidate output with a high-precision reference of the same shape."""
    if tuple(out.shape) != tuple(ref.shape):
        return Comparison(False, problem=f"shape {tuple(out.shape)} but the reference has {tuple(ref.shape)}")
    if out.is_complex() or ref.is_complex():
        # real and imaginary parts as floats (``double()`` of a complex tensor drops the imaginary part unseen)
        if not (out.is_complex() and ref.is_complex()):
            return Comparison(False, problem=f"dtype {out.dtype} but the reference is {ref.dtype}")
        return compare(torch.view_as_real(out.resolve_conj()), torch.view_as_real(ref.resolve_conj()), tol)
    if not out.dtype.is_floating_point and not ref.dtype.is_floating_point:
        return _compare_exact(out, ref)
    expected = ref.to(out.dtype) if out.dtype.is_floating_point else ref
    if out.dtype.is_floating_point:
        for name, fn in (("NaN", torch.isnan), ("+Inf", torch.isposinf), ("-Inf", torch.isneginf)):
            got, want = fn(out), fn(expected)
            if not torch.equal(got, want):
                where = int((got != want).sum())
                return Comparison(False, mismatched=where,
                                  problem=f"{name} at {where} positions where the reference has none (or vice versa)")
    finite = torch.isfinite(expected) if out.dtype.is_floating_point else torch.ones_like(out, dtype=torch.bool)
    o = out.double()[finite]
    r = ref.double()[finite]
    if o.numel() == 0:
        return Comparison(True)
    abs_err = (o - r).abs()
    bound = tol.widen * (tol.atol + tol.rtol * r.abs())
    bad = abs_err > bound
    max_abs = float(abs_err.max())
    max_rel = float((abs_err / r.abs().clamp_min(1e-12)).max())
    rel_l2 = relative_l2(o, r) if out.dtype.is_floating_point else 0.0
    result = Comparison(True, max_abs, max_rel, rel_l2, int(bad.sum()))
    if result.mismatched:
        idx = int(torch.argmax(abs_err - bound).item())
        result.ok = False
        widen = f" x {tol.widen:.3g} (eager PyTorch's own error on these inputs)" if tol.widen > 1 else ""
        result.problem = (f"{result.mismatched} of {o.numel()} elements outside atol={tol.atol:g}, rtol={tol.rtol:g}"
                          f"{widen} (worst: got {float(o[idx]):.6g}, expected {float(r[idx]):.6g})")
    elif out.dtype.is_floating_point and rel_l2 > tol.rel:
        result.ok = False
        result.problem = f"relative error ||out-ref||/||ref|| = {rel_l2:.3g} exceeds {tol.rel:g}"
    elif _near_constant(o) and _relative_spread(r) > max(tol.rel, 1e-12) * tol.widen:
        # a constant where the reference varies by more than the relative tolerance; a reference that varies by
        # less (cosine similarities of nearly parallel rows, all within 1e-6 of 1) is matched by a constant within
        # the tolerance the task asks for, and that is correct
        result.ok = False
        result.problem = "output is constant but the reference is not"
    return result


def _compare_exact(out: torch.Tensor, ref: torch.Tensor) -> Comparison:
    """Integer and boolean outputs must equal the reference exactly, compared as integers: through float64 (53-bit
    mantissa) an int64 off by one above 2**53 would compare equal."""
    wide = torch.int64 if out.dtype != torch.uint64 and ref.dtype != torch.uint64 else torch.uint64
    o, r = out.to(wide), ref.to(wide)
    bad = o != r
    mismatched = int(bad.sum())
    if not mismatched:
        return Comparison(True)
    idx = int(torch.nonzero(bad.reshape(-1))[0])
    return Comparison(False, mismatched=mismatched,
                      problem=f"{mismatched} of {o.numel()} elements differ from the reference (integers must be "
                              f"exact; first: got {int(o.reshape(-1)[idx])}, expected {int(r.reshape(-1)[idx])})")


def _relative_spread(values: torch.Tensor) -> float:
    if values.numel() < 2:
        return 0.0
    return float(values.max() - values.min()) / max(float(values.abs().max()), 1e-30)


def _near_constant(values: torch.Tensor) -> bool:
    if values.numel() < 2:
        return False
    spread = float(values.max() - values.min())
    scale = float(values.abs().max())
    return spread <= 1e-12 * max(scale, 1e-30) or spread == 0.0
