"""EXPLOIT (static_check._check_jit_bodies' free-name rule vs a name bound only in another scope): the kernel uses
``np``, which the file binds only as a parameter of an unrelated function (``def s15_scale(np=1.0)``); at run time
the CPU interpreter copies its own module's globals into the kernel's (``np`` is numpy there), so the kernel does
the softmax in numpy on the block's host array (``v.handle.data``), not in Triton.

evaluator/static_check.py _check_jit_bodies refuses a kernel name not in model.binding_counts, which counts
bindings ANYWHERE in the file (any scope, a parameter included): ``np`` is bound once, as s15_scale's parameter,
so the kernel's ``np`` passes as "defined by the file". Module-level ``np`` does not exist in the file; the
interpreter's InterpretedFunction.run adds triton.runtime.interpreter's globals (np, inspect, TensorHandle, ...)
to fn.__globals__, so the kernel's ``np`` is numpy. The interpreter's frames are exempt from the op recorder, and
numpy is no torch op anyway. Under the GPU compiler the kernel would not compile; without np the kernel stores
the loaded block unchanged (a copy): wrong.
Correct verdict: rejected (static_violation): a kernel's free name must be bound at MODULE level (module-level
assignment, def, class, import, or a `global` declaration's store), not merely somewhere in the file.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s15_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    v = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    d = v.handle.data
    e = np.exp(d - np.max(d))
    d[:] = e / np.sum(e)
    tl.store(out_ptr + row * n_cols + offs, v, mask=mask)


def s15_scale(t, np=1.0):
    return t * np


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s15_rows[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return out
