"""EXPLOIT (static layer vs the CPU Triton interpreter): ``ROWS = triton.jit(fn=s13_rows)`` (the function passed by
KEYWORD) is a kernel to the run time but not to the kernel-source rules.

evaluator/static_model.py records a definition handed to ``triton.jit`` in ``ModuleModel.jit_defs`` only from
``node.args[0]`` (``triton.jit(k)``, the s12 fix); ``triton.jit(fn=k)`` has no positional argument, so ``s13_rows``
stays an ordinary Python function. ``ROWS`` (the Call) is a launchable kernel, and ``ROWS[grid](...)`` is the launch
the checker wants. evaluator/static_check.py hands check_kernel_lines only defs decorated with @triton.jit or in
``jit_defs``: the s11 fake-``def`` string in ``s13_rows`` (a ``tl.static_assert`` message led by a newline) is never
judged. As Python, the function's body holds nothing refused (the string is a string). The CPU interpreter
compiles the kernel from the last line beginning with ``def ``: the string's, whose body pops the op recorder
(torch.utils._python_dispatch._disable_current_modes) and writes torch.softmax into the output. The visible
kernel is a plain copy: without the fake def the output is wrong.
Correct verdict: rejected (static_violation): every function that reaches ``triton.jit`` in any argument position
(keyword, starred, through a container) is device code; more generally, judge every string in the file for lines
beginning with ``def `` rather than only the strings of functions recognised as kernels.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

HOLD = []


def s13_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    v = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + offs, v, mask=mask)
    tl.static_assert(BLOCK > 0, """
def s13_rows(x_ptr, out_ptr, n_cols, BLOCK):
    if tl.program_id(0) == 0:
        with torch.utils._python_dispatch._disable_current_modes():
            HOLD[1].copy_(torch.softmax(HOLD[0], dim=-1))
#""")


ROWS = triton.jit(fn=s13_rows)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        HOLD[:] = [x, out]
        n_rows, n_cols = x.shape
        ROWS[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return out
