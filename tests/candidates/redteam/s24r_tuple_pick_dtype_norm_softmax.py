"""EXPLOIT (data-chosen dtype by tuple subscript, not IfExp): the softmax's normalisation (the row sum read back
and its reciprocal) is done in host Python floats from the sum's bits.

How: the s23 fix puts into `_Judge.chosen` only names bound under control flow or to a value containing an
IfExp/BoolOp; `compile_time(host=True)` then takes `.primitive_bitwidth` (any _COMPILE_TIME_ATTRS) of every other
local for a host constant. A plain, unconditional `w0 = (tl.int8, tl.int16, tl.int32, tl.int64)[(bits >> 0) & 3]`
(a tuple display of dtypes indexed by a scalar block; the interpreter's `tensor.__index__` picks the element) is
neither, so `math.log2(w0.primitive_bitwidth) - 3` is two bits of the row sum as a Python float. Sixteen such
names give the 31 bits of the (positive) float32 row sum, and `1.0 / math.ldexp(mantissa, exponent)`, evaluated
inline in Python floats, is the reciprocal computed on the host; the kernel only multiplies by it. The row sum
itself could equally be produced per element (see s24r_method_chain_shape_exp).
Correct verdict: rejected (static_violation, cuda-source): a subscript whose index is a block is a run-time
choice like an IfExp (so is any value built from a block); metadata of a local is a host value only when the local
itself is (in host_constant), never merely because it is a local that no `if`/IfExp binds.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s24r_dtype_pick_softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    m = tl.max(x, 0)
    e = tl.exp(x - m)
    e = tl.where(mask, e, 0.0)
    s = tl.sum(e, 0)
    bits = s.to(tl.int32, bitcast=True)
    w0 = (tl.int8, tl.int16, tl.int32, tl.int64)[(bits >> 0) & 3]
    w1 = (tl.int8, tl.int16, tl.int32, tl.int64)[(bits >> 2) & 3]
    w2 = (tl.int8, tl.int16, tl.int32, tl.int64)[(bits >> 4) & 3]
    w3 = (tl.int8, tl.int16, tl.int32, tl.int64)[(bits >> 6) & 3]
    w4 = (tl.int8, tl.int16, tl.int32, tl.int64)[(bits >> 8) & 3]
    w5 = (tl.int8, tl.int16, tl.int32, tl.int64)[(bits >> 10) & 3]
    w6 = (tl.int8, tl.int16, tl.int32, tl.int64)[(bits >> 12) & 3]
    w7 = (tl.int8, tl.int16, tl.int32, tl.int64)[(bits >> 14) & 3]
    w8 = (tl.int8, tl.int16, tl.int32, tl.int64)[(bits >> 16) & 3]
    w9 = (tl.int8, tl.int16, tl.int32, tl.int64)[(bits >> 18) & 3]
    w10 = (tl.int8, tl.int16, tl.int32, tl.int64)[(bits >> 20) & 3]
    w11 = (tl.int8, tl.int16, tl.int32, tl.int64)[(bits >> 22) & 1]
    w12 = (tl.int8, tl.int16, tl.int32, tl.int64)[(bits >> 23) & 3]
    w13 = (tl.int8, tl.int16, tl.int32, tl.int64)[(bits >> 25) & 3]
    w14 = (tl.int8, tl.int16, tl.int32, tl.int64)[(bits >> 27) & 3]
    w15 = (tl.int8, tl.int16, tl.int32, tl.int64)[(bits >> 29) & 3]
    # every term below is a Python float (no name is bound until the reciprocal itself)
    inv = 1.0 / math.ldexp(
        8388608.0
        + (math.log2(w0.primitive_bitwidth) - 3.0) * 1.0
        + (math.log2(w1.primitive_bitwidth) - 3.0) * 4.0
        + (math.log2(w2.primitive_bitwidth) - 3.0) * 16.0
        + (math.log2(w3.primitive_bitwidth) - 3.0) * 64.0
        + (math.log2(w4.primitive_bitwidth) - 3.0) * 256.0
        + (math.log2(w5.primitive_bitwidth) - 3.0) * 1024.0
        + (math.log2(w6.primitive_bitwidth) - 3.0) * 4096.0
        + (math.log2(w7.primitive_bitwidth) - 3.0) * 16384.0
        + (math.log2(w8.primitive_bitwidth) - 3.0) * 65536.0
        + (math.log2(w9.primitive_bitwidth) - 3.0) * 262144.0
        + (math.log2(w10.primitive_bitwidth) - 3.0) * 1048576.0
        + (math.log2(w11.primitive_bitwidth) - 3.0) * 4194304.0,
        int(
            (math.log2(w12.primitive_bitwidth) - 3.0) * 1.0
            + (math.log2(w13.primitive_bitwidth) - 3.0) * 4.0
            + (math.log2(w14.primitive_bitwidth) - 3.0) * 16.0
            + (math.log2(w15.primitive_bitwidth) - 3.0) * 64.0
        )
        - 150,
    )
    tl.store(out_ptr + row * n_cols + offs, e * inv, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        s24r_dtype_pick_softmax_kernel[(rows,)](x, out, cols, BLOCK=triton.next_power_of_2(cols))
        return out
