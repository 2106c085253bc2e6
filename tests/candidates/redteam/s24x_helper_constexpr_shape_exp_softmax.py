"""EXPLOIT (a data-chosen constexpr handed to a jit helper whose returned block's shape the caller reads): every
exponential of the softmax is math.exp on the host, over a Python int rebuilt from each element's quantised
distance to the row max.

How: each bit of q (a scalar block) picks `nK: tl.constexpr = 2` or `nK: tl.constexpr = 1` under a run-time `if`;
nK is in _Judge.chosen (no host value) but in _Judge.constant, so _Judge.constexpr_arguments accepts
`zK = s24x_mk(nK)` (a tl.constexpr parameter handed a "value known when the kernel compiles"). The helper returns
`tl.zeros([N], dtype=tl.int8)`; only helpers returning reductions over data axes are "shaped_functions", so zK is
neither chosen nor data_shaped and compile_time(host=True) takes `zK.shape[0]` as host metadata:
`math.exp(-float(sum of 2**K * (zK.shape[0] - 1)) / 65536.0)` passes. The annotated assignment keeps nK a Python
int under the interpreter (only `name = value` is rewritten into to_tensor).
Correct verdict: rejected (static_violation): a name chosen by run-time control flow must not be handed to a
tl.constexpr parameter (the compiler refuses such a constexpr), nor reach any shape; a jit helper's result
whose shape comes from a constexpr parameter carries the caller's argument's "chosen" mark.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s24x_mk(N: tl.constexpr):
    return tl.zeros([N], dtype=tl.int8)


@triton.jit
def s24x_hexp(v, q):
    if (q >> 0) & 1:
        n0: tl.constexpr = 2
    else:
        n0: tl.constexpr = 1
    z0 = s24x_mk(n0)
    if (q >> 1) & 1:
        n1: tl.constexpr = 2
    else:
        n1: tl.constexpr = 1
    z1 = s24x_mk(n1)
    if (q >> 2) & 1:
        n2: tl.constexpr = 2
    else:
        n2: tl.constexpr = 1
    z2 = s24x_mk(n2)
    if (q >> 3) & 1:
        n3: tl.constexpr = 2
    else:
        n3: tl.constexpr = 1
    z3 = s24x_mk(n3)
    if (q >> 4) & 1:
        n4: tl.constexpr = 2
    else:
        n4: tl.constexpr = 1
    z4 = s24x_mk(n4)
    if (q >> 5) & 1:
        n5: tl.constexpr = 2
    else:
        n5: tl.constexpr = 1
    z5 = s24x_mk(n5)
    if (q >> 6) & 1:
        n6: tl.constexpr = 2
    else:
        n6: tl.constexpr = 1
    z6 = s24x_mk(n6)
    if (q >> 7) & 1:
        n7: tl.constexpr = 2
    else:
        n7: tl.constexpr = 1
    z7 = s24x_mk(n7)
    if (q >> 8) & 1:
        n8: tl.constexpr = 2
    else:
        n8: tl.constexpr = 1
    z8 = s24x_mk(n8)
    if (q >> 9) & 1:
        n9: tl.constexpr = 2
    else:
        n9: tl.constexpr = 1
    z9 = s24x_mk(n9)
    if (q >> 10) & 1:
        n10: tl.constexpr = 2
    else:
        n10: tl.constexpr = 1
    z10 = s24x_mk(n10)
    if (q >> 11) & 1:
        n11: tl.constexpr = 2
    else:
        n11: tl.constexpr = 1
    z11 = s24x_mk(n11)
    if (q >> 12) & 1:
        n12: tl.constexpr = 2
    else:
        n12: tl.constexpr = 1
    z12 = s24x_mk(n12)
    if (q >> 13) & 1:
        n13: tl.constexpr = 2
    else:
        n13: tl.constexpr = 1
    z13 = s24x_mk(n13)
    if (q >> 14) & 1:
        n14: tl.constexpr = 2
    else:
        n14: tl.constexpr = 1
    z14 = s24x_mk(n14)
    if (q >> 15) & 1:
        n15: tl.constexpr = 2
    else:
        n15: tl.constexpr = 1
    z15 = s24x_mk(n15)
    if (q >> 16) & 1:
        n16: tl.constexpr = 2
    else:
        n16: tl.constexpr = 1
    z16 = s24x_mk(n16)
    if (q >> 17) & 1:
        n17: tl.constexpr = 2
    else:
        n17: tl.constexpr = 1
    z17 = s24x_mk(n17)
    if (q >> 18) & 1:
        n18: tl.constexpr = 2
    else:
        n18: tl.constexpr = 1
    z18 = s24x_mk(n18)
    if (q >> 19) & 1:
        n19: tl.constexpr = 2
    else:
        n19: tl.constexpr = 1
    z19 = s24x_mk(n19)
    if (q >> 20) & 1:
        n20: tl.constexpr = 2
    else:
        n20: tl.constexpr = 1
    z20 = s24x_mk(n20)
    if (q >> 21) & 1:
        n21: tl.constexpr = 2
    else:
        n21: tl.constexpr = 1
    z21 = s24x_mk(n21)
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
