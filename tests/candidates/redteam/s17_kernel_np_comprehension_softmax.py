"""EXPLOIT (static_check._check_kernel_names counts every binding inside the kernel's def, nested scopes
included): the kernel uses ``np`` as a free name, and binds ``np`` only as the target of a comprehension in its own
body (``[0 for np in ()]``), whose variable lives in the comprehension's own scope. binding_counts(kernel) walks
the whole def, so ``np`` counts as the kernel's own and the free-name rule passes; at run time the kernel's ``np``
is a global, which the CPU interpreter fills with its own numpy (FunctionRewriter._compile_and_exec copies its
module's globals into the file's), and the kernel does the softmax in numpy on the loaded block's host array
(``v.handle.data``). Without np the kernel stores the loaded block unchanged (a copy): wrong.
Correct verdict: rejected (static_violation): a kernel's free names must be resolved as Python scopes them -- a
name bound only in a comprehension, lambda or nested def of the kernel (or of an enclosing function) is not bound
in the kernel's scope.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s17_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    _unused = [0 for np in ()]
    v = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    d = v.handle.data
    e = np.exp(d - np.max(d))
    d[:] = e / np.sum(e)
    tl.store(out_ptr + row * n_cols + offs, v, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s17_rows[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return out
