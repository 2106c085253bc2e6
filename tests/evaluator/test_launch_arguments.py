"""What a kernel run by Triton's interpreter may be handed (``guards.kernel_argument_refusal``): what a compiled
kernel could be handed, nothing that carries Python methods of its own into the kernel."""

from __future__ import annotations

import collections

import pytest
import torch
import triton
import triton.language as tl

from evaluator.sandboxed.guards import kernel_argument_refusal


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
