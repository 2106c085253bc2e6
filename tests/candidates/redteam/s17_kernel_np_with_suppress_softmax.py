"""EXPLOIT (static_uses._always_bound takes a ``with`` body as always completing): the kernel's ``np`` is "bound at
module scope" by ``np = None`` inside ``with contextlib.suppress(ZeroDivisionError):`` after ``1 // 0``: the
division raises, the context manager swallows it, and the assignment never runs. module_bindings counts every
binding of a with body (as if no statement in it could raise), so static_check._check_kernel_names passes; at run
time ``np`` is unbound in the file, the CPU interpreter fills it with its own numpy, and the kernel does the
softmax in numpy on the loaded block's host array (``v.handle.data``). Without np the kernel stores the loaded
block unchanged (a copy): wrong.
Correct verdict: rejected (static_violation): a with body binds for sure only when its context manager cannot
swallow exceptions (no ``__exit__`` of the candidate's or contextlib.suppress), or only up to its first statement
that may raise; simplest: count no binding inside a ``with`` block.
"""

import contextlib

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s17_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    v = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    d = v.handle.data
    e = np.exp(d - np.max(d))
    d[:] = e / np.sum(e)
    tl.store(out_ptr + row * n_cols + offs, v, mask=mask)


with contextlib.suppress(ZeroDivisionError):
    S17_SPLIT = 1 // 0
    np = None


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s17_rows[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return out
