"""Red team s18's mechanisms, each with the honest form that must still pass: a kernel body doing host Python on
its blocks (text, lists, ``math`` of values, a plain function handed in as a constexpr), and an autograd Function
whose ``apply`` or ``setup_context`` is not the one the checker judged (a base of the file's, a classmethod, an
assignment)."""

from __future__ import annotations

import pytest
from test_static_check import make
from test_static_s13 import FUNCTION

from evaluator.static_check import check_source


def _violations(source: str) -> list[tuple[str, str]]:
    return [(v.rule, v.message) for v in check_source(source, "cand.py").violations]


KERNEL = '''
import math

EPS = 1e-6
SCALES = (1.0, 2.0)
CELL = [0.0]


class Box:
    value = 0.0

    def parse(self, v):
        return v


BOX = Box()


@triton.jit
def helper(v):
    return v * 2.0


@triton.jit
def rows(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
{body}
    tl.store(out_ptr + offs, v, mask=offs < n)
'''


def _kernel(body: str) -> str:
    module = KERNEL.format(body="\n".join("    " + line for line in body.splitlines()))
    return make(module=module, body="rows[(1,)](x, out, x.numel(), FN=helper, BLOCK=1024)")


def _kernel_findings(body: str) -> list[str]:
    return [m for rule, m in _violations(_kernel(body)) if rule == "cuda-source" and "kernel `rows`" in m]


@pytest.mark.parametrize("body", [
    "acc = tl.zeros([BLOCK], dtype=tl.float32)\nv = v + acc",
    "tl.static_assert(BLOCK % 16 == 0, f'BLOCK={BLOCK} must be a multiple of 16')",
    "WIDE: tl.constexpr = min(BLOCK, 1024)\nv = v * WIDE",
    "v = v * triton.cdiv(BLOCK, 16) * float(EPS) * math.log2(math.e)",
    "v = v.to(tl.float32)\nv = v - tl.max(v, axis=0)\nv = helper(v)",
    "s = v.shape[0]\nv = v * len(v.shape) * s",
    "pid = tl.program_id(0).to(tl.int64)\nv = (v + pid).to(tl.float32) * SCALES[1]",
    "v = tl.where(v > 0, v, -v) if BLOCK > 1 else v",
    "v = v * (n > 0).to(tl.float32)",  # a comparison of blocks is a block: its methods compile
    "v = v + (tl.load(x_ptr + offs) == v).to(tl.float32)",
    "v = (v if BLOCK > 1 else -v).to(tl.float32)",
    "for i in range(0, BLOCK, 16):\n    v = v + i",
])
def test_what_tritons_compiler_compiles_passes(body):
    assert _kernel_findings(body) == []


@pytest.mark.parametrize("body", [
    "vals = []",
    "vals = [t for t in range(BLOCK)]",
    "text = str(v)",
    "f = float(tl.sum(v, axis=0))",
    "v = v * math.exp(tl.max(v, axis=0))",
    "s = f'{v}'",
    "s = '%s' % v",
    "s = '{}'.format(v)",
    "table = {0: v}",
    "total = sum(tl.load(x_ptr + offs))",
    "w = tl.load(x_ptr + offs)\nv = v * float(w)",
    "v = FN(v)",  # a constexpr parameter: the launch may hand it a plain Python function
    "CELL[0] = v",  # a module-level list: a store, and a read of a mutable global
    "v = v * CELL[0]",
    "BOX.value = v",
    "v = BOX.parse(v)",  # a method of a module-level object
    "print(v, file=BOX)",
    "m = max((v,), key=BOX.parse)",
    "m = max(v)",  # one argument: iterates the block on the host
    "match v:\n    case blk:\n        v = helper(float(blk))",
    "acc = list()",
])
def test_host_python_on_blocks_is_refused(body):
    assert _kernel_findings(body), body


# -- an autograd Function whose apply/setup_context is not the one judged (static_liveness.plain_function_class) -----

BACKWARD = "    @staticmethod\n    def backward("


@pytest.mark.parametrize("change", [
    ("class _Rows(torch.autograd.Function):", "class _Rows(Launch, torch.autograd.Function):"),
    ("class _Rows(torch.autograd.Function):", "@functools.total_ordering\nclass _Rows(torch.autograd.Function):"),
    ("class _Rows(torch.autograd.Function):", "class _Rows(torch.autograd.Function, metaclass=type):"),
    (BACKWARD, "    @classmethod\n    def apply(cls, x):\n        return cls.backward(None, x)\n\n" + BACKWARD),
    (BACKWARD, "    setup_context = staticmethod(print)\n\n" + BACKWARD),
])
def test_a_function_class_that_is_not_plain_keeps_its_backward_live(change):
    base = "import functools\n\nclass Launch:\n    pass\n\n" + FUNCTION.format(forward="")
    assert change[0] in base
    source = make(module=base.replace(change[0], change[1]), body="out = _Rows.apply(x)")
    assert "private-api" in {rule for rule, _ in _violations(source)}


def test_a_plain_function_class_leaves_its_backward_dead():
    source = make(module=FUNCTION.format(forward=""), body="out = _Rows.apply(x)")
    assert "private-api" not in {rule for rule, _ in _violations(source)}
