"""What a kernel run by Triton's interpreter may be handed (``guards.kernel_argument_refusal``) and read from its
module (``guards.kernel_global_refusals``): what a compiled kernel could be handed or resolve, nothing that carries
Python methods of its own into the kernel."""

from __future__ import annotations

import collections
import math
import types

import numpy as np  # noqa: F401  (read by a kernel built from text below)
import pytest
import torch
import triton
import triton.language as tl

from evaluator.sandboxed.guards import kernel_argument_refusal, kernel_global_refusals


@triton.jit
def _combine(a, b):
    return a + b


class _Stats:
    def softmax(self, block):
        return block


def _disguised():
    pass


_disguised.__module__ = "triton.language.core"


class _Row(tuple):
    def softmax(self, block):
        return block


_Pair = collections.namedtuple("_Pair", "a b")


class _Int(int):
    def softmax(self, block):
        return block


@pytest.mark.parametrize("value", [1, 2.5, True, None, "gelu", torch.float16, tl.float32, tl.constexpr(128),
                                   tl.constexpr("relu"), _combine, (1, (2, tl.float16)), (_combine, 4), tl.exp,
                                   tl.maximum])
def test_what_a_compiled_kernel_takes_passes_in_any_slot(value):
    assert kernel_argument_refusal(value, constexpr=True) is None
    assert kernel_argument_refusal(value, constexpr=False) is None


def test_tensors_pass_only_where_the_interpreter_turns_them_into_pointers():
    x = torch.zeros(4)
    assert kernel_argument_refusal(x, constexpr=False) is None
    assert kernel_argument_refusal((x, 3), constexpr=False) is None
    assert kernel_argument_refusal(x, constexpr=True)  # a constexpr is handed over as it is


@pytest.mark.parametrize("value", [_Stats(), _Int(3), (1, _Stats()), tl.constexpr(_Stats()), [1, 2], {"a": 1},
                                   print, len, object(), _disguised, _Row(), _Row((1, 2)), _Pair(1, 2)])
def test_python_objects_are_refused_in_any_slot(value):
    for constexpr in (True, False):
        why = kernel_argument_refusal(value, constexpr=constexpr)
        assert why and "object" in why, (value, constexpr)


# ---- what a kernel reads from its module (guards.kernel_global_refusals): what Triton's compiler would resolve

ROWS = 4
SCALE = tl.constexpr(0.5)
NAME = "gelu"
DTYPE = tl.float16
STATS = _Stats()
BOXED = tl.constexpr(_Stats())
FORGED = types.ModuleType("triton.language.fake")
FORGED.softmax = lambda block: block
exp_alias = tl.exp
cdiv = triton.cdiv


def _host_softmax(block):
    return block


@triton.jit
def _scaled(x):
    return x * SCALE


@triton.jit
def _honest(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK)).to(DTYPE)
    y = exp_alias(_scaled(x)) + math.pi + ROWS + cdiv(BLOCK, 2) + _combine(x, x)
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.maximum(y, 0.0) / max(BLOCK, 1) if NAME == "gelu" else y)


def _kernel_storing(expression: str, name: str = "kernel"):
    """The Python function of a kernel that stores ``expression`` of its input, read in this module's namespace
    (what the interpreter's launch hands the check: one exploit per read, without a file of its own each)."""
    namespace: dict = {}
    exec(f"def {name}(x_ptr):\n    x = tl.load(x_ptr)\n    tl.store(x_ptr, {expression})\n", globals(), namespace)
    return namespace[name]


@triton.jit
def _helper_reads_object(x):
    return STATS.softmax(x)


@triton.jit
def _through_a_helper(x_ptr):
    tl.store(x_ptr, _helper_reads_object(tl.load(x_ptr)))


@triton.jit
def _assigns_a_global(x_ptr):
    global ROWS
    ROWS = tl.load(x_ptr)


def _closing_over(stats):
    @triton.jit
    def kernel(x_ptr):
        tl.store(x_ptr, stats.softmax(tl.load(x_ptr)))
    return kernel


def test_a_kernel_reading_constants_dtypes_jit_functions_and_triton_reads_nothing_refused():
    assert kernel_global_refusals(_honest) == []
    assert kernel_global_refusals(_honest.fn) == []  # the interpreter's launch hands over the Python function


@pytest.mark.parametrize(("kernel", "named"), [
    (_kernel_storing("STATS.softmax(x)"), "`STATS` (in `kernel`) = a `_Stats` object"),
    (_kernel_storing("BOXED.softmax(x)"), "`BOXED` (in `kernel`) = a `_Stats` object"),  # a constexpr is unwrapped
    (_kernel_storing("np.exp(x)"), "`np` (in `kernel`) = the module `numpy`"),
    (_kernel_storing("FORGED.softmax(x)"), "`FORGED` (in `kernel`) = the module `triton.language.fake`"),
    (_kernel_storing("_host_softmax(x)"), "`_host_softmax` (in `kernel`) = a Python function, not a jit function"),
    (_kernel_storing("_disguised(x)"), "`_disguised` (in `kernel`) = a Python function, not a jit function"),
    (_kernel_storing("eval('1') + x"), "`eval` (in `kernel`) = a Python builtin a compiled kernel has no meaning for"),
    (_through_a_helper, "`STATS` (in `_helper_reads_object`) = a `_Stats` object"),  # jit functions it reaches
    (_assigns_a_global, "`ROWS` (in `_assigns_a_global`) = a global it assigns (`global` is no kernel's)"),
    (_closing_over(_Stats()), "`stats` (in `kernel`) = a `_Stats` object"),  # its enclosing scope's names too
])
def test_a_kernel_reading_host_objects_modules_functions_or_builtins_is_refused_by_name(kernel, named):
    assert named in kernel_global_refusals(kernel)
