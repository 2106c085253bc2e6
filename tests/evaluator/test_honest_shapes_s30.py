"""Honest code a false-reject hunt (session 30) found refused, now accepted where nothing of the candidate's can
run unseen: named tuples as outputs, IntEnum members as constexprs, and the static names tutorials and libraries
use (torch._check, threading.Lock, once_differentiable, a tutorial's main block and benchmark declaration)."""

from __future__ import annotations

import collections
import enum
import typing

import pytest
import torch
from test_static_check import make

from evaluator.sandboxed.guards import kernel_argument_refusal, plain_int_enum
from evaluator.sandboxed.output_checks import Rejection, output_list, plain_namedtuple
from evaluator.static_check import check_source


class Quantized(typing.NamedTuple):
    q: torch.Tensor
    scale: torch.Tensor


Pair = collections.namedtuple("Pair", "a b")


class WithIter(typing.NamedTuple):
    a: torch.Tensor

    def __iter__(self):  # what a program unpacking it would run
        return iter([torch.zeros(1)])


class WithMethod(typing.NamedTuple):
    a: torch.Tensor

    def doubled(self):
        return self.a * 2


class Activation(enum.IntEnum):
    GELU = 0
    SILU = 1


class Sly(enum.IntEnum):
    GELU = 0

    def __int__(self):  # Triton's specialisation would run it
        return 1


def test_named_tuples_made_by_the_library_are_outputs():
    assert plain_namedtuple(Quantized) and plain_namedtuple(Pair)
    q, s = torch.ones(2), torch.zeros(1)
    assert output_list(Quantized(q, s), "call") == [q, s]


@pytest.mark.parametrize("kind", [WithIter, WithMethod])
def test_named_tuples_with_methods_of_their_own_are_refused(kind):
    assert not plain_namedtuple(kind)
    with pytest.raises(Rejection, match="named tuples with methods"):
        output_list(kind(torch.ones(1)), "call")


def test_an_int_enum_of_members_only_is_a_constexpr():
    assert plain_int_enum(Activation) and kernel_argument_refusal(Activation.SILU, constexpr=True) is None
    assert not plain_int_enum(Sly) and kernel_argument_refusal(Sly.GELU, constexpr=True) is not None


HONEST = {
    "torch._check": dict(body="torch._check(x.shape[-1] > 0, lambda: 'empty rows')"),
    "threading.Lock": dict(module="import threading\n\nLOCK = threading.Lock()",
                           body="with LOCK:\n    block = triton.next_power_of_2(x.shape[-1])"),
    "once_differentiable": dict(module=(
        "from torch.autograd.function import once_differentiable\n\n\nclass Copy(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, t):\n        return t\n\n    @staticmethod\n    @once_differentiable\n"
        "    def backward(ctx, g):\n        return g * 2\n"), body="out = Copy.apply(out)"),
    "arange offsets": dict(body="offsets = torch.arange(0, x.shape[0] + 1, device=x.device)"),
    "a tutorial's main block": dict(module=(
        "def _check():\n    x = torch.randn(4, 8)\n    torch.testing.assert_close(ModelNew()(x), x)\n\n\n"
        "@triton.testing.perf_report(triton.testing.Benchmark(x_names=['N'], x_vals=[128], line_arg='p',\n"
        "    line_vals=['t'], line_names=['T'], ylabel='GB/s', plot_name='copy', args={}))\n"
        "def benchmark(N, p):\n    x = torch.randn(N)\n"
        "    return triton.testing.do_bench(lambda: torch.softmax(x, -1))\n")),
}


@pytest.mark.parametrize("name", list(HONEST))
def test_honest_library_and_tutorial_names_pass(name):
    source = make(**HONEST[name])
    if name == "a tutorial's main block":
        source += ("\n\nif __name__ == '__main__':\n    torch.manual_seed(0)\n    _check()\n"
                   "    benchmark.run(print_data=True)\n")
    report = check_source(source, "cand.py")
    assert report.ok, report.violations


@pytest.mark.parametrize(("module", "body"), [
    ("import threading", "threading.Thread(target=print).start()"),
    ("import threading", "n = threading.active_count()"),
    ("", "torch.manual_seed(0)"),  # outside a main block: still changes process-wide state
    ("", "m = torch.arange(x.numel()).float().sum()"),  # arange then compute: the compute is refused
    # a benchmark that runs where the candidate does (its run() times the kernel)
    ("B = triton.testing.perf_report(triton.testing.Benchmark(x_names=['N'], x_vals=[1], line_arg='p', "
     "line_vals=['t'], line_names=['T'], ylabel='x', plot_name='y', args={}))(lambda N, p: 1.0)", "B.run()"),
])
def test_what_stays_refused(module, body):
    assert not check_source(make(module=module, body=body), "cand.py").ok


# -- red team of the relaxations (session 30) -------------------------------------------------------------------

def test_the_else_of_a_main_block_runs_and_is_judged():
    source = make(body="y = _impl(x)  # HERE") + (
        "\n\nif __name__ == '__main__':\n    pass\nelse:\n    def _impl(t):\n"
        "        return torch.softmax(t, -1)\n")
    report = check_source(source, "cand.py")
    assert any(v.rule == "torch-compute" for v in report.violations), report.violations


class _Meta(type):
    pass


def test_a_named_tuple_with_a_metaclass_of_its_own_is_refused():
    clone = _Meta("Clone", (tuple,), dict(vars(Pair)))
    assert not plain_namedtuple(clone)


def test_an_int_enum_whose_comparison_is_a_foreign_c_function_is_refused():
    chosen = {1}

    class Rigged(enum.IntEnum):
        ONE = 1
        __eq__ = chosen.__contains__  # equality decided by the candidate's set

    assert not plain_int_enum(Rigged)


_LAYER = make().replace("class ModelNew(nn.Module):", "class Layer(nn.Module):")
_LAYER += "\n\nclass ModelNew(Layer):\n    pass\n"


def test_model_new_may_derive_from_the_file_s_own_layer():
    report = check_source(_LAYER, "cand.py")
    assert report.ok, report.violations


@pytest.mark.parametrize("swap", [
    # torch's own layer made of modules underneath (a leaf layer such as nn.Linear is accepted since session 32,
    # where the file's class defines forward: test_static_walkarounds_s32.py)
    ("class Layer(nn.Module):", "class Layer(nn.TransformerEncoderLayer):"),
    ("class Layer(nn.Module):", "class Layer(nn.Module, metaclass=type):"),
    ("    def forward(self, x):\n        out = torch.empty_like(x)",
     "    def __call__(self, x):\n        return torch.softmax(x, -1)\n\n    def forward(self, x):\n"
     "        out = torch.empty_like(x)"),  # the harness's nn.Module.__call__ replaced underneath
])
def test_what_model_new_derives_from_is_judged_as_model_new(swap):
    assert not check_source(_LAYER.replace(*swap), "cand.py").ok


_SOFTMAX_HELPER = "    def helper(t):\n        return torch.softmax(t, -1)\n"


@pytest.mark.parametrize("source", [
    # a method ModelNew inherits from the file's layer, through self. and through super()
    _LAYER.replace("    def forward(self, x):\n        out = torch.empty_like(x)",
                   "    def act(self, t):\n        return torch.softmax(t, -1)\n\n    def forward(self, x):\n"
                   "        out = torch.empty_like(x)").replace(
        "class ModelNew(Layer):\n    pass\n",
        "class ModelNew(Layer):\n    def forward(self, x):\n        return self.act(x)\n"),
    _LAYER.replace("copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)",
                   "out = torch.softmax(x, -1)").replace(
        "class ModelNew(Layer):\n    pass\n",
        "class ModelNew(Layer):\n    def forward(self, x):\n        out = torch.empty_like(x)\n"
        "        copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)\n"
        "        return super().forward(x)\n"),
    # a def in a module-level loop or match case, bound once, that forward calls
    make(module="for _ in range(1):\n" + _SOFTMAX_HELPER, body="out = helper(out)"),
    make(module="while True:\n" + _SOFTMAX_HELPER + "    break", body="out = helper(out)"),
    make(module="match 1:\n    case 1:\n" + _SOFTMAX_HELPER.replace("    ", "        "), body="out = helper(out)"),
], ids=["inherited method", "super().forward", "def in a for", "def in a while", "def in a match case"])
def test_torch_work_reached_through_the_new_paths_is_judged(source):
    report = check_source(source, "cand.py")
    assert any(v.rule == "torch-compute" for v in report.violations), report.violations
