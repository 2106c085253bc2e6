"""EXPLOIT (a data-chosen constexpr size laundered through tl.zeros' shape): every exponential of the softmax is
math.exp on the host, over a Python int rebuilt from each element's quantised distance to the row max.

How: each bit of q (a scalar block) picks `nK: tl.constexpr = 2` or `nK: tl.constexpr = 1` under a run-time `if`,
so nK is in _Judge.chosen (never a host value) but still in _Judge.constant (compile-time for the compiler's rules),
and _Judge._shape_arguments checks a shape with the non-host compile_time: `zK = tl.zeros([nK], dtype=tl.int8)`
passes. zK is bound once, outside any control flow, so it is not chosen, not data_shaped (only reductions with a
data axis are), and compile_time(host=True) accepts `zK.shape[0]` (metadata of a local): `math.exp(-float(sum
of 2**K * (zK.shape[0] - 1)) / 65536.0)` passes as compile-time host math. The annotated assignment keeps nK a
Python
int under the interpreter (only `name = value` is rewritten into to_tensor), so tl.zeros accepts it as a shape.
Correct verdict: rejected (static_violation): a chosen name must not reach a shape, dtype or axis (the compiler
refuses a constexpr that differs between the branches of a run-time `if`), or the "chosen" mark must flow to every
local whose metadata such a value picks (zK here), keeping `zK.shape` out of host math.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s24x_hexp(v, q):
    if (q >> 0) & 1:
        n0: tl.constexpr = 2
    else:
        n0: tl.constexpr = 1
    z0 = tl.zeros([n0], dtype=tl.int8)
    if (q >> 1) & 1:
        n1: tl.constexpr = 2
    else:
        n1: tl.constexpr = 1
    z1 = tl.zeros([n1], dtype=tl.int8)
    if (q >> 2) & 1:
        n2: tl.constexpr = 2
    else:
        n2: tl.constexpr = 1
    z2 = tl.zeros([n2], dtype=tl.int8)
    if (q >> 3) & 1:
        n3: tl.constexpr = 2
    else:
        n3: tl.constexpr = 1
    z3 = tl.zeros([n3], dtype=tl.int8)
    if (q >> 4) & 1:
        n4: tl.constexpr = 2
    else:
        n4: tl.constexpr = 1
    z4 = tl.zeros([n4], dtype=tl.int8)
    if (q >> 5) & 1:
        n5: tl.constexpr = 2
    else:
        n5: tl.constexpr = 1
    z5 = tl.zeros([n5], dtype=tl.int8)
    if (q >> 6) & 1:
        n6: tl.constexpr = 2
    else:
        n6: tl.constexpr = 1
    z6 = tl.zeros([n6], dtype=tl.int8)
    if (q >> 7) & 1:
        n7: tl.constexpr = 2
    else:
        n7: tl.constexpr = 1
    z7 = tl.zeros([n7], dtype=tl.int8)
    if (q >> 8) & 1:
        n8: tl.constexpr = 2
    else:
        n8: tl.constexpr = 1
    z8 = tl.zeros([n8], dtype=tl.int8)
    if (q >> 9) & 1:
        n9: tl.constexpr = 2
    else:
        n9: tl.constexpr = 1
    z9 = tl.zeros([n9], dtype=tl.int8)
    if (q >> 10) & 1:
        n10: tl.constexpr = 2
    else:
        n10: tl.constexpr = 1
    z10 = tl.zeros([n10], dtype=tl.int8)
    if (q >> 11) & 1:
        n11: tl.constexpr = 2
    else:
        n11: tl.constexpr = 1
    z11 = tl.zeros([n11], dtype=tl.int8)
    if (q >> 12) & 1:
        n12: tl.constexpr = 2
    else:
        n12: tl.constexpr = 1
    z12 = tl.zeros([n12], dtype=tl.int8)
    if (q >> 13) & 1:
        n13: tl.constexpr = 2
    else:
        n13: tl.constexpr = 1
    z13 = tl.zeros([n13], dtype=tl.int8)
    if (q >> 14) & 1:
        n14: tl.constexpr = 2
    else:
        n14: tl.constexpr = 1
    z14 = tl.zeros([n14], dtype=tl.int8)
    if (q >> 15) & 1:
        n15: tl.constexpr = 2
    else:
        n15: tl.constexpr = 1
    z15 = tl.zeros([n15], dtype=tl.int8)
    if (q >> 16) & 1:
        n16: tl.constexpr = 2
    else:
        n16: tl.constexpr = 1
    z16 = tl.zeros([n16], dtype=tl.int8)
    if (q >> 17) & 1:
        n17: tl.constexpr = 2
    else:
        n17: tl.constexpr = 1
    z17 = tl.zeros([n17], dtype=tl.int8)
    if (q >> 18) & 1:
        n18: tl.constexpr = 2
    else:
        n18: tl.constexpr = 1
    z18 = tl.zeros([n18], dtype=tl.int8)
    if (q >> 19) & 1:
        n19: tl.constexpr = 2
    else:
        n19: tl.constexpr = 1
    z19 = tl.zeros([n19], dtype=tl.int8)
    if (q >> 20) & 1:
        n20: tl.constexpr = 2
    else:
        n20: tl.constexpr = 1
    z20 = tl.zeros([n20], dtype=tl.int8)
    if (q >> 21) & 1:
        n21: tl.constexpr = 2
    else:
        n21: tl.constexpr = 1
    z21 = tl.zeros([n21], dtype=tl.int8)
    return v * 0.0 + math.exp(
        -float(
            1 * (z0.shape[0] - 1)
            + 2 * (z1.shape[0] - 1)
            + 4 * (z2.shape[0] - 1)
            + 8 * (z3.shape[0] - 1)
            + 16 * (z4.shape[0] - 1)
            + 32 * (z5.shape[0] - 1)
            + 64 * (z6.shape[0] - 1)
            + 128 * (z7.shape[0] - 1)
            + 256 * (z8.shape[0] - 1)
            + 512 * (z9.shape[0] - 1)
            + 1024 * (z10.shape[0] - 1)
            + 2048 * (z11.shape[0] - 1)
            + 4096 * (z12.shape[0] - 1)
            + 8192 * (z13.shape[0] - 1)
            + 16384 * (z14.shape[0] - 1)
            + 32768 * (z15.shape[0] - 1)
            + 65536 * (z16.shape[0] - 1)
            + 131072 * (z17.shape[0] - 1)
            + 262144 * (z18.shape[0] - 1)
            + 524288 * (z19.shape[0] - 1)
            + 1048576 * (z20.shape[0] - 1)
            + 2097152 * (z21.shape[0] - 1)
        )
        / 65536.0
    )


@triton.jit
def s24x_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row * n_cols
    offs = tl.arange(0, BLOCK)
    w = tl.load(x_ptr + base + offs, mask=offs < n_cols, other=float("-inf"))
    m = tl.max(w, axis=0)
    total = 0.0
    for j in range(n_cols):
        v = tl.load(x_ptr + base + j)
        q = tl.minimum((m - v) * 65536.0 + 0.5, 4194303.0).to(tl.int32)
        e = s24x_hexp(v, q)
        tl.store(out_ptr + base + j, e)
        total += e
    for j in range(n_cols):
        tl.store(out_ptr + base + j, tl.load(out_ptr + base + j) / total)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s24x_rows[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return out
