"""Honest kernel bodies in the style of public Triton code must pass the kernel-body allow-list
(``evaluator.static_kernel_body``): each line below is a form real libraries write, restated in our own words. The
rule that lets a form through is pinned by its refused twin, a form that would run host Python instead."""

from __future__ import annotations

import pytest
from test_static_check import make

from evaluator.static_check import check_source

KERNEL = '''
import math

{module}


@triton.jit
def combine(a, b):
    return tl.maximum(a, b)


@triton.jit
def scale(v, WIDTH: tl.constexpr, FN: tl.constexpr):
    return v * WIDTH


@triton.jit
def rows(x_ptr, out_ptr, n, BLOCK: tl.constexpr, FLAG: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
{body}
    tl.store(out_ptr + offs, v, mask=offs < n)
'''


def _findings(body: str, module: str = "") -> list[str]:
    """The kernel-body findings for ``rows`` with ``body`` spliced in and ``module`` at module level."""
    source = make(module=KERNEL.format(module=module, body="\n".join("    " + line for line in body.splitlines())),
                  body="rows[(1,)](x, out, x.numel(), BLOCK=1024, FLAG=True)")
    return [v.message for v in check_source(source, "cand.py").violations
            if v.rule == "cuda-source" and v.message.startswith("kernel `")]


# -- a module-level alias of a Triton operation, bound in each branch of an ``if`` or ``try`` -------------------------

BRANCH_ALIAS = "USE_EXP2 = False\nif USE_EXP2:\n    fexp = tl.math.exp2\nelse:\n    fexp = tl.exp\n"
TRY_ALIAS = ("try:\n    from triton.language.extra.libdevice import tanh\n"
             "except ImportError:\n    from triton.language.extra.cuda.libdevice import tanh\n")
LIBDEVICE_ALIAS = ("from triton.language.extra import libdevice\n\nif USE_LIB:\n    th = libdevice.tanh\nelse:\n"
                   "    th = tl.math.tanh\n")


@pytest.mark.parametrize(("module", "body"), [
    ("FAST = True\nfexp = tl.exp if FAST else tl.exp2", "v = fexp(v)"),
    (BRANCH_ALIAS, "v = fexp(v)"),
    (BRANCH_ALIAS, "v = fexp(v - tl.max(v, axis=0)).to(tl.float32)"),  # its result is a block: its methods compile
    (TRY_ALIAS, "v = tanh(v)"),
    ("USE_LIB = True\n" + LIBDEVICE_ALIAS, "v = th(v * 0.5)"),
    ("fexp = tl.exp", "v = fexp(v)"),
])
def test_an_alias_of_a_triton_operation_passes(module, body):
    assert _findings(body, module) == []


@pytest.mark.parametrize(("module", "body"), [
    ("if True:\n    fexp = tl.exp\nelse:\n    fexp = math.exp\n", "v = fexp(v)"),  # one branch runs host Python
    ("fexp = tl.exp if True else math.exp", "v = fexp(v)"),
    ("try:\n    from triton.language.extra.absent import tanh\nexcept ImportError:\n    from math import tanh\n",
     "v = tanh(v)"),
    ("try:\n    import triton.language.absent as lib\nexcept ImportError:\n    import math as lib\n",
     "v = lib.tanh(v)"),
    ("try:\n    import triton.language.absent as lib\nexcept ImportError:\n    import math as lib\nth = lib.tanh\n",
     "v = th(v)"),
    (BRANCH_ALIAS + "\ndef swap():\n    global fexp\n    fexp = print\n", "v = fexp(v)"),  # rebound elsewhere
    (BRANCH_ALIAS, "fexp = math.exp\nv = fexp(v)"),  # the kernel's own local shadows the alias
])
def test_an_alias_that_may_be_host_python_is_refused(module, body):
    assert _findings(body, module), (module, body)


# -- forms of tutorial and library kernels (attention, persistent matmul, scans, norms) ------------------------------

@pytest.mark.parametrize("body", [
    "i = tl.program_id(0).to(tl.int64)\nv = v + i.to(tl.float32)",
    "lo, hi = 0, n\nfor s in tl.range(lo, hi, BLOCK, num_stages=2, flatten=True):\n    v += 1.0",
    "for i in tl.static_range(2):\n    v = v * 2.0",
    "w = tl.join(v, v).permute(1, 0).reshape([2 * BLOCK])\nv = v + tl.sum(w, axis=0)",
    "a, b = tl.split(tl.reshape(tl.join(v, v), (BLOCK, 2)))\nv = a + b",
    "order: tl.constexpr = (0,) if FLAG else (0,)\n"
    "p = tl.make_block_ptr(base=x_ptr, shape=(n,), strides=(1,), offsets=(0,), block_shape=(BLOCK,), order=order)\n"
    "v = tl.load(p, boundary_check=(0,))\np = tl.advance(p, (BLOCK,))",
    "d = tl.make_tensor_descriptor(x_ptr, shape=[n], strides=[1], block_shape=[BLOCK])\nv = d.load([0])\n"
    "d.store([0], v)",
    "v = tl.associative_scan(v, axis=0, combine_fn=combine)",
    "m = float('-inf')\nm = tl.maximum(m, tl.max(v, 0))\nv = tl.math.exp2((v - m) * 1.4426950408889634)",
    "v = tl.where(v >= 0, v + 1.0, tl.exp(tl.minimum(v, 0.0))).to(out_ptr.dtype.element_ty)",
    "eps = tl.full((), 1e-6, tl.float32)\nv = v * tl.math.rsqrt(tl.sum(v * v, axis=0) / BLOCK + eps)",
    "if out_ptr.dtype.element_ty == tl.float16:\n    v = v.to(tl.float16)",
    "tl.static_assert(BLOCK % 16 == 0)\ntl.debug_barrier()",
    "w = tl.cumsum(v, axis=0, reverse=True)\nv = -w + tl.sum(v, 0)[None] + v",
])
def test_library_kernel_forms_pass(body):
    assert _findings(body) == []


# -- what holds a value of the program: only names every binding of which is one --------------------------------------

@pytest.mark.parametrize("body", [
    "acc = 0.0\nacc += tl.sum(v, axis=0)\nv = v * acc.to(tl.float32)",  # a literal start, then blocks
    "a, b = tl.split(tl.reshape(tl.join(v, v), (BLOCK, 2)))\nv = (a + b).to(tl.float32)",
    "for i in tl.range(0, 2):\n    v = v + i.to(tl.float32)",
    "v = tl.reduce(v, 0, combine)\nv = v.reduce(0, combine)",  # a jit function as the combine function
    "v = tl.associative_scan(v, axis=0, combine_fn=tl.maximum) if FLAG else v",
    "dt = tl.float32 if FLAG else tl.float16\nv = v.to(dt)",
    "if (w := tl.max(v, axis=0)) > 0:\n    v = v / w.to(tl.float32)",
    "w = v if BLOCK > 4 else 0.0\nv = v + w.to(tl.float32)",
    "m = min(v, 1.0)\nv = m.to(tl.float32)",
    "v = scale(v, BLOCK, combine)",  # constexpr parameters of a jit function: compile-time values and jit functions
    "v = scale(v, tl.max(v, 0), combine)",  # ... or a block, as Triton's attention tutorial hands offs_m
])
def test_values_of_the_program_keep_their_methods(body):
    assert _findings(body) == []


@pytest.mark.parametrize("module", [
    "", "EPS = 1e-6",
])
def test_literal_parameter_defaults_pass(module):
    defaults = "FLAG: tl.constexpr, eps=1e-6, DT: tl.constexpr = tl.float32, ACT: tl.constexpr = None):"
    source = make(module=KERNEL.format(module=module, body="").replace("FLAG: tl.constexpr):", defaults),
        body="rows[(1,)](x, out, x.numel(), BLOCK=1024, FLAG=True)")
    assert [v.message for v in check_source(source, "cand.py").violations if "kernel `rows`" in v.message] == []


WIDEN = "@triton.jit\ndef widen(v, K: tl.constexpr):\n    return v * float(K)\n"


@pytest.mark.parametrize(("module", "body"), [
    ("", "ops = FLAG\nv = ops.reshape(v)"),  # a constexpr (any Python object a launch hands over) under a new name
    ("", "ops = FLAG if BLOCK > 1 else FLAG\nv = ops.softmax(v)"),
    ("", "ops, k = FLAG, 1\nv = ops.sum(v)"),
    ("STATS = (1.0, 2.0)", "global STATS\nv = v * STATS[0]"),  # Triton compiles no global declaration
    ("", "v = tl.reduce(v, 0, FLAG)"),  # the interpreter calls the combine function in Python per element
    ("", "v = v.reduce(0, combine_fn=FLAG)"),
    ("", "v = tl.associative_scan(v, 0, *(FLAG,))"),
    ("", "v = tl.map_elementwise(FLAG, v)"),
    ("", "v = tl.constexpr(FLAG).value.softmax(v)"),  # tl.constexpr holds any Python value, and so does .value
    ("", "tl.static_assert(True, (t := f'{v}'))\nv = scale(v, t, combine)"),  # a block's text out of its message
    (WIDEN, "v = widen(v, BLOCK)"),  # float(K) on a constexpr parameter: another jit function may hand it a block
    (WIDEN, "v = widen(v, tl.max(v, 0))"),  # ... as here, read through the interpreter's __index__
    ("", "v = scale(v, BLOCK, *(combine,))"),
])
def test_python_objects_inside_a_kernel_are_refused(module, body):
    assert _findings(body, module), (module, body)


def test_a_parameter_default_other_than_a_constant_is_refused():
    module = "class Stats:\n    pass\n\n\nSTATS = Stats()\n"
    source = make(module=KERNEL.format(module=module, body="").replace("FLAG: tl.constexpr):", "FLAG: tl.constexpr, "
                                                                       "stats=STATS):"),
                  body="rows[(1,)](x, out, x.numel(), BLOCK=1024, FLAG=True)")
    assert any("default" in v.message for v in check_source(source, "cand.py").violations), source


# -- what Python's own callables (float, int, math.*) may take: values no run-time choice made ------------------------

@pytest.mark.parametrize("body", [
    "c = 2.0\nd = c * 0.5\nv = v * math.exp(d)",  # locals made of literals: the same value on every run
    "v = v * float(v.shape[0])",  # the shape of a value bound once
    "v = v * math.log2(math.e) * float(EPS)",
    "v = v / math.sqrt(BLOCK) * float(FLAG)",  # a kernel only ever launched: its constexprs are what launches hand
])
def test_host_values_made_without_run_time_choices_pass(body):
    assert _findings(body, "EPS = 1e-6") == []


@pytest.mark.parametrize("body", [
    "s = tl.sum(v, axis=0)\nif s > 0:\n    b = 1.0\nelse:\n    b = 0.0\nv = v * math.exp(b)",  # one bit of the data
    "s = tl.sum(v, axis=0)\nb = 0.0\nwhile b < s:\n    b = b + 1.0\nv = v * float(b)",  # a count the data chose
    "t = tl.zeros([2], tl.int8) if tl.sum(v, axis=0) > 0 else tl.zeros([1], tl.int8)\nv = v * float(t.shape[0])",
    "d = tl.int16 if tl.sum(v, axis=0) > 0 else tl.int8\nv = v * float(d.primitive_bitwidth)",
    "try:\n    v = v + 1.0\nexcept Exception:\n    v = v - 1.0",  # Triton compiles no exception handling
])
def test_host_values_the_data_chose_are_refused(body):
    assert _findings(body), body


@pytest.mark.parametrize("launch", [
    "rows[(1,)](x, out, x.numel(), BLOCK=1024, FLAG=True)\nlauncher = rows",  # handed on: may be called
    "rows.run(x, out, x.numel(), BLOCK=1024, FLAG=True, grid=(1,), warmup=False)",  # not the launch form
])
def test_host_math_on_constexprs_needs_a_kernel_only_ever_launched(launch):
    module = KERNEL.format(module="", body="    v = v / math.sqrt(BLOCK)")
    found = [v.message for v in check_source(make(module=module, body=launch), "cand.py").violations
             if v.message.startswith("kernel `rows` calls `math.sqrt`")]
    assert found, launch
