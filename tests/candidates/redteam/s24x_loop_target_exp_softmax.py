"""EXPLOIT (Python int from a for loop's target over a one-step range of a block): every exponential of the
softmax is a Python float power computed on the host; the kernel only finds the row max and normalises.

How: under the interpreter `range(U, U + 1)` (U a scalar block) is Python's range, its bounds read through the
patched `tensor.__index__`; the loop's only target value is a plain Python int equal to U (the interpreter rewrites
only `name = value` assignments into to_tensor, never a for target). _Judge._binds_block counts a `range` loop
variable as a block and _Judge._range_use accepts any bound for a `for` iterable, and no BinOp is judged, so
`2.718281828459045 ** (1.0 - ((u & 8388607) + 8388608) * 2.0 ** ((u >> 23) - 150))` passes as block arithmetic
while it is Python's float pow over the element's float32 bits (d = max(x - m, -100) - 1, U = bits(d) & 0x7fffffff).
A compiled kernel's loop variable is a device scalar and `**` on one does not compile.
Correct verdict: rejected (static_violation): a `range`/`tl.range` loop variable whose bounds are run-time values
is a Python int in the interpreter: arithmetic that would be host Python on it (`**`, bit tricks feeding a float
power) must be refused, or such loops must use compile-time bounds only where their target escapes the loop.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s24x_loop_target_kernel(x_ptr, out_ptr, bits_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    xrow = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    m = tl.max(xrow, 0)
    d = tl.maximum(xrow - m, -100.0) - 1.0
    bp = bits_ptr + row * n_cols
    tl.store(bp + offs, d.to(tl.int32, bitcast=True) & 2147483647, mask=mask)
    ob = out_ptr + row * n_cols
    for j in range(n_cols):
        w = tl.load(bp + j)
        for u in range(w, w + 1):
            tl.store(ob + j, 2.718281828459045 ** (1.0 - ((u & 8388607) + 8388608) * 2.0 ** ((u >> 23) - 150)))
    y = tl.load(ob + offs, mask=mask, other=0.0)
    tl.store(ob + offs, y / tl.sum(y, 0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        scratch = torch.empty((rows, cols), dtype=torch.int32, device=x.device)
        s24x_loop_target_kernel[(rows,)](x, out, scratch, cols, BLOCK=triton.next_power_of_2(cols))
        return out
