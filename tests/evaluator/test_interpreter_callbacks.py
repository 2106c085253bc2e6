"""What the CPU answers for a kernel whose Triton operation calls a function back on every element.

The interpreter runs a ``tl.reduce`` / ``tl.associative_scan`` combine function as Python once per element, so a
correct kernel may not finish its correctness calls within the phase limit on a CPU: that is "needs --device cuda"
(exit 2, with the line), never a ``timeout`` rejection. A hang anywhere else stays a ``timeout``.
"""

import textwrap

import pytest

from evaluator.static_kernel_body import calls_back_per_element

_REDUCE = textwrap.dedent('''
    import triton
    import triton.language as tl


    @triton.jit
    def _add(a, b):
        return a + b


    @triton.jit
    def _kernel(X, Y, BLOCK: tl.constexpr):
        x = tl.load(X + tl.arange(0, BLOCK))
        tl.store(Y, {call})
''')


@pytest.mark.parametrize("call", ["tl.reduce(x, 0, _add)", "tl.associative_scan(x, 0, _add)",
                                  "triton.language.reduce(x, axis=0, combine_fn=_add)"])
def test_a_combine_function_is_found_with_its_line(call):
    assert calls_back_per_element(_REDUCE.format(call=call)) == 14


@pytest.mark.parametrize("call", ["tl.sum(x, 0)", "tl.max(x, axis=0)"])
def test_builtin_reductions_call_nothing_back(call):
    assert calls_back_per_element(_REDUCE.format(call=call)) is None


def test_unparsable_source_has_no_callback():
    assert calls_back_per_element("def (") is None


_TASK = '''
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=-1)


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(8, 64)]
'''

# the combine function never returns in the interpreter: deterministic, whatever the machine's speed
_HANGING_COMBINE = '''
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _combine(a, b):
    while a == a:
        a = a + 0.0
    return a + b


@triton.jit
def _sum_kernel(X, Y, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + row * n + cols, mask=cols < n, other=0.0)
    tl.store(Y + row, tl.reduce(x, 0, _combine))


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        _sum_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return y
'''


@pytest.mark.slow
def test_a_combine_function_too_slow_for_the_interpreter_answers_needs_gpu(tmp_path):
    from evaluator import EvalOptions, NeedsGPU, evaluate

    (tmp_path / "task.py").write_text(_TASK)
    (tmp_path / "cand.py").write_text(_HANGING_COMBINE)
    # 30 s per phase: the process's start-up fits in it on a loaded machine, the hanging calls never do
    with pytest.raises(NeedsGPU) as raised:
        evaluate(str(tmp_path / "task.py"), str(tmp_path / "cand.py"), device="cpu",
                 options=EvalOptions(timeout_s=30.0))
    message = str(raised.value)
    assert "--device cuda" in message and "line 20" in message, message
