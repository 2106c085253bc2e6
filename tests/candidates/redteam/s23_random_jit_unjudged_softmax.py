"""EXPLOIT (triton.jit under another name is no kernel to the checker): `from triton.language.random import jit`
(also `@tl.random.jit`, `@tl.standard.jit`: both modules re-export triton.jit itself) decorates the kernel that
does the softmax. static_model matches TRITON_JIT = "triton.jit" by resolved dotted name, so `s23_rows` is a plain
host function: static_kernel_body never judges its body, only the forward-path host rules (which a
`math.exp(math.ldexp(q, -24))` per element does not trip). A decoy @triton.jit kernel is launched so that
no-kernel/kernel-not-launched pass. Under the interpreter s23_rows is a real JITFunction launch; every exponential
is math.exp on the host (max error 0).
Correct verdict: rejected (static_violation): every path to triton.jit (triton.language.random.jit,
triton.language.standard.jit, triton.runtime.jit.jit...) is triton.jit (canonicalise by object identity at
checker start-up, or refuse `jit` from any module but `triton`).
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.random import jit as s23_jit


@triton.jit
def s23_scale(x_ptr, out_ptr, n):
    offs = tl.arange(0, 16)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@s23_jit
def s23_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    w = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=float("-inf"))
    m = tl.max(w, axis=0)
    s = 0.0
    for j in range(n_cols):
        q = ((tl.load(x_ptr + row * n_cols + j) - m) * 16777216.0).to(tl.int32)
        e = math.exp(math.ldexp(q, -24))
        tl.store(out_ptr + row * n_cols + j, e)
        s = s + e
    for j in range(n_cols):
        tl.store(out_ptr + row * n_cols + j, tl.load(out_ptr + row * n_cols + j) / s)

class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s23_rows[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        s23_scale[(1,)](x, out, 0)
        return out
