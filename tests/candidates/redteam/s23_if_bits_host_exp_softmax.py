"""EXPLOIT (a name bound only to literals under a run-time `if` is a host constant): _Judge.host_constant takes
a local every assignment of which is compile_time(host=True), without looking at which control flow picks the
assignment. `if (q >> k) & 1: bk = 2.0**k else: bk = 0.0` (q a scalar block) binds bk to one of two literals, so
bk is a host constant and `math.exp(-(int(b0) + ... + int(b21)) / 65536.0)` passes as compile-time host math.
Under the interpreter the `if` reads the block through the patched tensor.__bool__; int(bk) reads the (to_tensor'd)
literal through __index__; every exponential of the softmax is math.exp on the host (max error ~8e-7).
Correct verdict: rejected (static_violation): a name bound under an `if`/`while`/`for`/`try`/`match` whose
condition or bound is not compile-time is no compile-time value unless every such binding is the same value (the
compiler itself refuses a constexpr that differs between the branches of a run-time `if`).
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s23_hexp(v, q):
    if (q >> 0) & 1:
        b0 = 1.0
    else:
        b0 = 0.0
    if (q >> 1) & 1:
        b1 = 2.0
    else:
        b1 = 0.0
    if (q >> 2) & 1:
        b2 = 4.0
    else:
        b2 = 0.0
    if (q >> 3) & 1:
        b3 = 8.0
    else:
        b3 = 0.0
    if (q >> 4) & 1:
        b4 = 16.0
    else:
        b4 = 0.0
    if (q >> 5) & 1:
        b5 = 32.0
    else:
        b5 = 0.0
    if (q >> 6) & 1:
        b6 = 64.0
    else:
        b6 = 0.0
    if (q >> 7) & 1:
        b7 = 128.0
    else:
        b7 = 0.0
    if (q >> 8) & 1:
        b8 = 256.0
    else:
        b8 = 0.0
    if (q >> 9) & 1:
        b9 = 512.0
    else:
        b9 = 0.0
    if (q >> 10) & 1:
        b10 = 1024.0
    else:
        b10 = 0.0
    if (q >> 11) & 1:
        b11 = 2048.0
    else:
        b11 = 0.0
    if (q >> 12) & 1:
        b12 = 4096.0
    else:
        b12 = 0.0
    if (q >> 13) & 1:
        b13 = 8192.0
    else:
        b13 = 0.0
    if (q >> 14) & 1:
        b14 = 16384.0
    else:
        b14 = 0.0
    if (q >> 15) & 1:
        b15 = 32768.0
    else:
        b15 = 0.0
    if (q >> 16) & 1:
        b16 = 65536.0
    else:
        b16 = 0.0
    if (q >> 17) & 1:
        b17 = 131072.0
    else:
        b17 = 0.0
    if (q >> 18) & 1:
        b18 = 262144.0
    else:
        b18 = 0.0
    if (q >> 19) & 1:
        b19 = 524288.0
    else:
        b19 = 0.0
    if (q >> 20) & 1:
        b20 = 1048576.0
    else:
        b20 = 0.0
    if (q >> 21) & 1:
        b21 = 2097152.0
    else:
        b21 = 0.0
    bits = (int(b0) + int(b1) + int(b2) + int(b3) + int(b4) + int(b5) + int(b6) + int(b7) + int(b8) + int(b9)
            + int(b10) + int(b11) + int(b12) + int(b13) + int(b14) + int(b15) + int(b16) + int(b17) + int(b18)
            + int(b19) + int(b20) + int(b21))
    return v * 0.0 + math.exp(-bits / 65536.0)


@triton.jit
def s23_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row * n_cols
    offs = tl.arange(0, BLOCK)
    w = tl.load(x_ptr + base + offs, mask=offs < n_cols, other=float("-inf"))
    m = tl.max(w, axis=0)
    total = 0.0
    for j in range(n_cols):
        v = tl.load(x_ptr + base + j)
        q = tl.minimum((m - v) * 65536.0 + 0.5, 4194303.0).to(tl.int32)
        e = s23_hexp(v, q)
        tl.store(out_ptr + base + j, e)
        total += e
    for j in range(n_cols):
        tl.store(out_ptr + base + j, tl.load(out_ptr + base + j) / total)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s23_rows[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return out
