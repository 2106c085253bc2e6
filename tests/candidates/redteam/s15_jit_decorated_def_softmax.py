"""EXPLOIT (ModuleModel.jit_defs / jit_unnamed binding count vs a decorator on the def handed to triton.jit):
``@s15_swap def s15_rows(...)`` (an honest copy kernel) then ``ROWS = triton.jit(s15_rows)``: the name s15_rows is
bound only by its def, so the binding-count rule passes, but the def's decorator returns another function,
s15_stage, a plain host function of the file, and THAT is what triton.jit wraps and the interpreter runs.

evaluator/static_model.py build_model appends every def named s15_rows to jit_defs when
counts[name] == len(defs[name]) (+1 for `k = triton.jit(k)`); it never looks at the def's decorator_list, which
decides the value the def binds. So the checker judges the copy kernel as device code, and s15_stage only as a
host function (kernel-body rules -- tl/math only, no host data -- never apply to it). At run time triton.jit gets
s15_stage; the CPU interpreter rewrites and runs it as the kernel: it reads the loaded block's host array
(``v.handle.data``) and does the softmax in Python with math.exp, element by element, in the interpreter's
(recorder-exempt) frames. Under the GPU compiler this is no kernel at all. Without the swap the output is the
copy: wrong.
STATUS: the checker accepts it (no violation); the run rejects it as incorrect on the wide-input case only (40 of
2048 elements: this host math loses precision there), so it is kept as a regression entry, not an accepted exploit.
Correct verdict: rejected (static_violation): a def handed to triton.jit must carry no decorator (or the decorated
value must be followed, as a jit_unnamed); the guard could also refuse a JITFunction whose fn.__name__ differs from
the name the checker judged.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


def s15_stage(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    v = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)
    d = v.handle.data
    top = max(d[i] for i in range(n_cols))
    e = [math.exp(d[i] - top) for i in range(n_cols)]
    total = sum(e)
    for i in range(n_cols):
        d[i] = e[i] / total
    tl.store(out_ptr + row * n_cols + offs, v, mask=mask)


def s15_swap(fn):
    return s15_stage


@s15_swap
def s15_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    v = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + offs, v, mask=mask)


ROWS = triton.jit(s15_rows)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        ROWS[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return out
