"""EXPLOIT (a tell the plain run's pinned hand-over buffers introduced, GPU only): the plain process copies device
outputs to the host through page-locked buffers it allocates on its first judged call
(evaluator/sandboxed/plain.py ``_pinned_buffer``, ``torch.empty(..., pin_memory=True)``); the guarded process hands
outputs over through VMM exports or a pageable ``.to("cpu")`` copy and pins nothing.

The kernel reads torch's own counter of pinned host memory, ``torch.cuda.host_memory_stats()`` (public API, no import
of anything but torch). While nothing is pinned it computes the stable softmax. Once something is -- in the plain
process from the call after its first judged one, and in a program that pins memory for its own transfers -- it skips
the row maximum (``exp(x) / sum(exp(x))``): right on the randn inputs the plain process replays, infinite/NaN on
large logits. Correct verdict: rejected (the plain process's own allocations must not be visible to the candidate:
pin the buffers before the candidate is imported, or make the guarded process pin alike) -- NOT RUN on a GPU in
session 27 (no CUDA machine used): the entry states the intended verdict.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s27_pinned_softmax(x_ptr, out_ptr, n_cols, STABLE: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    if STABLE:
        x = x - tl.max(x, axis=0)
    y = tl.exp(x)
    tl.store(out_ptr + row * n_cols + cols, y / tl.sum(y, axis=0), mask=mask)


def _pinned_bytes() -> int:
    if not torch.cuda.is_available():
        return 0
    stats = torch.cuda.host_memory_stats()
    return int(stats.get("allocated_bytes.current", 0) or stats.get("allocation.current", 0))


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        n_rows, n_cols = x2.shape
        out = torch.empty_like(x2)
        stable = _pinned_bytes() == 0
        s27_pinned_softmax[(n_rows,)](x2, out, n_cols, STABLE=stable, BLOCK=triton.next_power_of_2(n_cols))
        return out.view(x.shape)
