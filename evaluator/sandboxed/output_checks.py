"""Rules a candidate's outputs must keep in its own process, and the rejection that breaking one raises.

Checked where the outputs are made, before anything reaches the reference: runs on identical inputs
agree, no output aliases an input or an earlier output, and an output handed over stays as it was.
"""

from __future__ import annotations

from typing import Any

import torch

from evaluator.sandboxed import handoff


class Rejection(Exception):
    """The candidate broke a rule at run time; ``reason`` is a verdict reason."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def require_outputs_left_alone() -> None:
    """Every output handed over so far still holds what forward returned (checked before the reference
    reads them, whichever way they travel)."""
    changed = handoff.changed_since_sent()
    if changed:
        raise Rejection("cheat_suspected", f"{changed} changed after forward returned it (a kernel kept writing into "
                                           "an output it had already handed back); leave returned tensors alone")


def require_same(a: list[torch.Tensor], b: list[torch.Tensor], tolerant: bool, where: str) -> None:
    """Two runs on identical inputs agree (bitwise, or closely where the task declares atomics): a race or
    uninitialised memory shows up here."""
    for k, (x, y) in enumerate(zip(a, b)):
        same = torch.allclose(x, y, rtol=1e-3, atol=1e-5, equal_nan=True) if tolerant else same_bits(x, y)
        if x.shape != y.shape or not same:
            raise Rejection("incorrect", f"{where}: output {k} differs between runs on identical inputs (a race or "
                                         "uninitialised memory); set NONDETERMINISTIC_OK in the task if atomics "
                                         "make this expected")


def same_bits(x: torch.Tensor, y: torch.Tensor) -> bool:
    """Same shape, dtype and bytes (NaN payloads included)."""
    if x.shape != y.shape or x.dtype != y.dtype:
        return False
    return torch.equal(x.reshape(-1).view(torch.uint8) if x.numel() else x,
                       y.reshape(-1).view(torch.uint8) if y.numel() else y)


def require_no_alias(outs: list[torch.Tensor], inputs: list[Any], kept: list[torch.Tensor], where: str) -> None:
    """No output shares memory with an input or reuses an earlier output's memory (a cache that hands back
    the same buffer, or an answer written into the caller's tensors)."""
    def span(t: torch.Tensor) -> tuple[int, int]:
        start = t.untyped_storage().data_ptr()
        return start, start + t.untyped_storage().nbytes()

    input_spans = [span(x) for x in inputs if isinstance(x, torch.Tensor) and x.numel()]
    kept_ptrs = {t.untyped_storage().data_ptr() for t in kept if t.numel()}
    seen: set[int] = set()
    for k, out in enumerate(outs):
        if not out.numel():
            continue
        lo, hi = span(out)
        if any(lo < b and a < hi for a, b in input_spans):
            raise Rejection("cheat_suspected", f"{where}: output {k} shares memory with an input")
        if lo in kept_ptrs or lo in seen:
            raise Rejection("cheat_suspected", f"{where}: output {k} reuses the memory of an earlier output")
        seen.add(lo)
