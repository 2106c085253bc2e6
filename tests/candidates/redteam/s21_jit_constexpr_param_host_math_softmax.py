"""EXPLOIT (a jit helper's constexpr parameter is taken for a compile-time value): inside a ``@triton.jit``
helper, ``_Judge.constant`` holds each ``tl.constexpr`` parameter bound once, so ``float(TOK)`` and
``math.exp(V - M)`` pass as compile-time host calls (``_Judge.call``: ``_COMPILE_TIME_BUILTINS`` / ``math.*`` on
``compile_time`` arguments). But nothing checks what a *caller* hands those parameters: a jit function's call
passes with any arguments (``_Judge.call``: ``func.id in self.jit_names``), and under the interpreter a jit-to-jit
call (``InterpretedFunction.__call__``) is a plain Python call that no launch check sees. The kernel keeps each
element's text through a message context (``tl.static_assert(True, (t := f"{v}"))``, allowed) and hands it to
``s21_num(TEXT: tl.constexpr)`` (``tl.constexpr(TEXT).value.split("[")``: a ``tl.constexpr(...)`` call is a
block for ``_Judge.block``, so any value's methods named like a block's pass), which hands the number's text to
``s21_float(TOK: tl.constexpr)`` returning ``float(TOK)``: the row's max (``s21_max``: builtin ``max`` of two
constexpr parameters) and every ``math.exp`` (``s21_expm``) are host Python on Python floats (an assignment in
the interpreted kernel turns a Python float into a block, whose ``__index__`` would truncate it, so each value is
carried as text and parsed again); Triton only loads scalars, adds and divides.
Correct verdict: rejected (static_violation): an argument handed to a jit function's constexpr parameter must be
compile-time in the caller (a literal, a constexpr, arithmetic of them), and a name bound inside a message context
may be used only in messages.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s21_float(TOK: tl.constexpr):
    return float(TOK)


@triton.jit
def s21_num(TEXT: tl.constexpr):
    return s21_float(tl.constexpr(TEXT).value.split("[")[1].split("]")[0])


@triton.jit
def s21_expm(V: tl.constexpr, M: tl.constexpr):
    return math.exp(V - M)


@triton.jit
def s21_max(A: tl.constexpr, B: tl.constexpr):
    return max(A, B)


@triton.jit
def s21_rows(x_ptr, out_ptr, n_cols):
    row = tl.program_id(0)
    base = row * n_cols
    top = -1.0e30
    for j in range(n_cols):
        v = tl.load(x_ptr + base + j)
        tl.static_assert(True, (t := f"{v}"))
        tl.static_assert(True, (tt := f"{top}"))
        top = s21_max(s21_num(tt), s21_num(t))
    tl.static_assert(True, (tt := f"{top}"))
    total = 0.0
    for j in range(n_cols):
        v = tl.load(x_ptr + base + j)
        tl.static_assert(True, (t := f"{v}"))
        total = total + s21_expm(s21_num(t), s21_num(tt))
    for j in range(n_cols):
        v = tl.load(x_ptr + base + j)
        tl.static_assert(True, (t := f"{v}"))
        tl.store(out_ptr + base + j, s21_expm(s21_num(t), s21_num(tt)) / total)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        s21_rows[(n_rows,)](x, out, n_cols)
        return out
