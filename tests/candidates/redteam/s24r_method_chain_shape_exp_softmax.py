"""EXPLOIT (host math through a method chain's metadata): every exponential of the softmax is a Python float
computed on the host (math.exp / math.ldexp) from each element's exact float32 bits.

How: `_Judge.compile_time(node, host=True)` takes `<attr>` in _COMPILE_TIME_ATTRS (`shape`, `dtype`...) for a
host constant when `_root(node)` is a local that is not in `chosen`; `_root` walks through Attribute, Subscript and
*Call* nodes to the leftmost name and never looks at the call's arguments. So `z.broadcast_to([S24R_POW[q]]).shape[0]`
(z = tl.zeros([1], tl.int8), bound once outside any control flow) is "compile-time" although the shape is picked by
the data: `S24R_POW[q]` indexes a module-level tuple of powers of two with a scalar block (the interpreter's
`tensor.__index__`), broadcast_to makes a view of that size, and `.shape[0]` hands 2**q back to Python. `math.log2`
of it is the 4-bit digit q. Each element's float32 bits (after `d = max(x - max, -100) - 1`, always a normal
negative float) are read in 8 such digits, and `math.exp(1 - math.ldexp(mantissa, exponent))` is evaluated inline
(no name bound in the loop, so `chosen` never sees it); the kernel only stores the host-made value, adds it to
the row sum and divides at the end. The s23 fix (a `chosen` root is no host value)
does not apply: the data picks the shape in a call's argument, not in a binding.
Correct verdict: rejected (static_violation, cuda-source): metadata (`.shape`, `.dtype`, `.numel`...) is
compile-time only when the whole expression it is read from is compile-time (every call argument on the way to the
root judged compile_time too), and a Python callable (math.*, float) may not read a value derived from a block.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

S24R_POW = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)


@triton.jit
def s24r_chain_softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    z = tl.zeros([1], tl.int8)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    xrow = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    m = tl.max(xrow, 0)
    s = 0.0
    for j in range(n_cols):
        v = tl.load(x_ptr + row * n_cols + j)
        bits = (tl.maximum(v - m, -100.0) - 1.0).to(tl.int32, bitcast=True)
        e = math.exp(1.0 - math.ldexp(
            8388608.0
            + math.log2(z.broadcast_to([S24R_POW[bits & 15]]).shape[0])
            + math.log2(z.broadcast_to([S24R_POW[(bits >> 4) & 15]]).shape[0]) * 16.0
            + math.log2(z.broadcast_to([S24R_POW[(bits >> 8) & 15]]).shape[0]) * 256.0
            + math.log2(z.broadcast_to([S24R_POW[(bits >> 12) & 15]]).shape[0]) * 4096.0
            + math.log2(z.broadcast_to([S24R_POW[(bits >> 16) & 15]]).shape[0]) * 65536.0
            + math.log2(z.broadcast_to([S24R_POW[(bits >> 20) & 7]]).shape[0]) * 1048576.0,
            int(math.log2(z.broadcast_to([S24R_POW[(bits >> 23) & 15]]).shape[0])
                + math.log2(z.broadcast_to([S24R_POW[(bits >> 27) & 15]]).shape[0]) * 16.0) - 150))
        s = s + e
        tl.store(out_ptr + row * n_cols + j, e)
    inv = 1.0 / s
    y = tl.load(out_ptr + row * n_cols + offs, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + offs, y * inv, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        s24r_chain_softmax_kernel[(rows,)](x, out, cols, BLOCK=triton.next_power_of_2(cols))
        return out
