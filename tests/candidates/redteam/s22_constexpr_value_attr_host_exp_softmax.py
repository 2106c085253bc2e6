"""EXPLOIT (``.value`` of any local is compile-time): ``_Judge.compile_time`` takes ``name.attr`` for a compile-time
value whenever ``attr`` is in ``_COMPILE_TIME_ATTRS`` (``value`` among them) and ``name`` is *any* local of the kernel,
not only a constant one. ``c = tl.constexpr(q)`` wraps the scalar block ``q`` (a Triton operation's call, refused as
a block since s21 but not refused), and ``math.exp(float(c.value) / 2**24)`` then passes as compile-time host math.
Under the interpreter ``c.value`` is the block and ``float`` reads it through the interpreter's
``tensor.__index__`` (``q`` is ``(v - m) * 2**24`` as int32): every exponential of the softmax is ``math.exp`` on
the host; Triton only loads, takes the max and the sum, divides and stores.
Correct verdict: rejected (static_violation): an attribute is compile-time only when its root is (``c.value`` of a
name in ``_Judge.constant``; ``.dtype``/``.shape`` of a block are compile-time, ``.value`` of a block or of a
non-constant local is not), and ``tl.constexpr(x)`` of a value of the program should be refused outright.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s22_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row * n_cols
    offs = tl.arange(0, BLOCK)
    w = tl.load(x_ptr + base + offs, mask=offs < n_cols, other=float("-inf"))
    m = tl.max(w, axis=0)
    total = 0.0
    for j in range(n_cols):
        v = tl.load(x_ptr + base + j)
        q = ((v - m) * 16777216.0).to(tl.int32)
        c = tl.constexpr(q)
        e = v * 0.0 + math.exp(float(c.value) / 16777216.0)
        tl.store(out_ptr + base + j, e)
        total += e
    for j in range(n_cols):
        tl.store(out_ptr + base + j, tl.load(out_ptr + base + j) / total)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s22_rows[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return out
