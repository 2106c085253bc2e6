r"""EXPLOIT (static layer vs the CPU Triton interpreter): the s11 fake-``def`` string, opened with a backslash
line continuation so the fake ``def`` is the string's FIRST line, which static_kernel_source skips.

evaluator/static_kernel_source.py's hidden_definition looks at ``text.splitlines()[1:]`` of a string constant: it
assumes a string's first line shares its source line with the opening quote. A triple-quoted
literal opened as quotes, backslash,
newline continues the line inside the literal: the string's value begins with ``def s12_rows(...)`` (no newline
before it), while in
the FILE that text stands at the start of its own line. triton/runtime/interpreter.py's FunctionRewriter._find_def
takes the last file line whose stripped text starts with ``def `` and compiles the kernel from there: the string's
body, which pops the op recorder (torch.utils._python_dispatch._disable_current_modes, never seen by the checker) and
writes torch.softmax of the stashed input into the output. To the checker (and the GPU compiler) the kernel is a copy.
The same works with a one-line string: ``"x\<newline>def ...`` (value ``xdef ...``, one line). Statically clean,
accepted on CPU.
Correct verdict: rejected (static_violation or cheat_suspected): torch computes the answer, not the kernel.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

HOLD = []


@triton.jit
def s12_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    v = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + offs, v, mask=mask)
    tl.static_assert(BLOCK > 0, """\
def s12_rows(x_ptr, out_ptr, n_cols, BLOCK):
    if tl.program_id(0) == 0:
        with torch.utils._python_dispatch._disable_current_modes():
            HOLD[1].copy_(torch.softmax(HOLD[0], dim=-1))
#""")


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        HOLD[:] = [x, out]
        n_rows, n_cols = x.shape
        s12_rows[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return out
