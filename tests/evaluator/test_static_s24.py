"""Red team s24d's mechanisms, each with the honest form that must still pass: a branch on a parameter taken for
always None (a Function whose ``forward`` takes no ``ctx``, a rebinding by a mapping pattern's ``**rest``, what such
a branch may hold), and optional imports (recorded in the report, flagged on the verdict when not installed)."""

from __future__ import annotations

import textwrap

import pytest
from test_static_check import make
from test_static_s18 import _kernel, _kernel_findings

from evaluator.session import optional_paths_flag
from evaluator.static_check import check_source


def _rules(source: str) -> list[str]:
    return [v.rule for v in check_source(source, "cand.py").violations]


def _function(setup_context: str) -> str:
    return textwrap.dedent(f'''
        class Rows(torch.autograd.Function):
            @staticmethod
            def forward(rows, weight=None):
                if weight is not None:
                    return torch.softmax(weight, -1)
                return rows
{textwrap.indent(textwrap.dedent(setup_context), " " * 12)}
    ''')


@pytest.mark.parametrize("setup_context", [
    '''
    @staticmethod
    def setup_context(ctx, inputs, output):
        pass
    ''',
    "setup_context = staticmethod(lambda ctx, inputs, output: None)",
])
def test_apply_maps_onto_a_ctx_free_forward_from_its_first_parameter(setup_context):
    """With ``setup_context`` overridden, torch calls ``forward`` without ``ctx``: ``Rows.apply(None, x)`` hands
    ``x`` to ``weight``, so the branch runs and its PyTorch is judged."""
    source = make(module=_function(setup_context), body="out = Rows.apply(None, out)")
    assert "torch-compute" in _rules(source)


def test_setup_context_set_from_outside_the_class_counts_too():
    source = make(module=_function("") + "\nRows.setup_context = staticmethod(lambda ctx, i, o: None)\n",
                  body="out = Rows.apply(None, out)")
    assert "torch-compute" in _rules(source)


def test_a_forward_taking_ctx_keeps_its_always_none_branch_dead():
    module = textwrap.dedent('''
        class Rows(torch.autograd.Function):
            @staticmethod
            def forward(ctx, rows, weight=None):
                if weight is not None:
                    return torch.softmax(weight, -1)
                return rows
    ''')
    assert _rules(make(module=module, body="out = Rows.apply(out)")) == []


HELPER = '''
def norm(x, stats=None):
{rebind}
    if stats is not None:
        return torch.rsqrt(x)
    return x
'''


@pytest.mark.parametrize("rebind", [
    "    match {'x': x}:\n        case {**stats}:\n            pass",
    "    match x:\n        case [*stats]:\n            pass",
    "    match x:\n        case stats:\n            pass",
    "    (stats := x)",
    "    for stats in (x,):\n        pass",
    "    with torch.no_grad() as stats:\n        pass",
])
def test_every_way_to_rebind_the_parameter_keeps_the_branch_live(rebind):
    assert "torch-compute" in _rules(make(module=HELPER.format(rebind=rebind), body="out = norm(out)"))


def test_a_parameter_never_rebound_keeps_the_branch_dead():
    assert _rules(make(module=HELPER.format(rebind="    pass"), body="out = norm(out)")) == []


def test_an_always_none_branch_lifts_pytorch_but_not_banned_imports():
    """The branch is judged dead by an inference over every call site: what it may hold that running code may not
    is PyTorch (library index helpers), never what a wrong inference would hand out (sys.argv, os)."""
    module = textwrap.dedent('''
        import sys


        def pick(x, probe=None):
            if probe is not None:
                return x if sys.argv[:1] == ["-c"] else torch.rsqrt(x)
            return x
    ''')
    assert _rules(make(module=module, body="out = pick(out)")) == ["banned-import"]
    typing_block = textwrap.dedent('''
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            import os
    ''')
    assert _rules(make(module=typing_block)) == []  # a type-checking block never runs anywhere: still lifted


def test_optional_imports_in_running_code_are_reported():
    module = textwrap.dedent('''
        try:
            import kernelevo_absent_extra  # noqa: F401
        except ImportError:
            pass


        def unused():
            try:
                import kernelevo_absent_other  # noqa: F401
            except ImportError:
                pass
    ''')
    report = check_source(make(module=module), "cand.py")
    assert report.ok and report.optional_imports == ["kernelevo_absent_extra"]  # a dead function's are not


def test_the_verdict_flags_optional_imports_not_installed_here():
    assert optional_paths_flag([]) is None
    assert optional_paths_flag(["pdb", "torch"]) is None  # installed: the plain run imports them as a program does
    flag = optional_paths_flag(["pdb", "kernelevo_absent_extra"])
    assert flag is not None and "kernelevo_absent_extra" in flag and "pdb" not in flag
    assert "not run here" in flag


# -- red team s24r: block values read into Python through the interpreter's __index__ -------------------------------

@pytest.mark.parametrize("body", [
    "for i in tl.static_range(2):\n    v = v * SCALES[i]",  # a tuple of the file's, per unrolled step
    "for i in tl.static_range(BLOCK // 512):\n    v = v * SCALES[i % 2] * math.exp(i)",
    "SHAPE: tl.constexpr = [BLOCK // 2, 2]\nw = tl.reshape(v, SHAPE)\nv = tl.reshape(w, [BLOCK])",
    "idt = tl.core.get_int_dtype(bitwidth=v.dtype.primitive_bitwidth, signed=True)\nv = v.to(idt, bitcast=True)"
    ".to(tl.float32, bitcast=True)",
    "LIM: tl.constexpr = BLOCK if BLOCK < 2048 else 2048\n"
    "for i in tl.static_range(LIM // 1024):\n    v = v * SCALES[i]",
    "m = tl.max(v, axis=0)\nv = v - tl.max(m, m)",  # a block as an axis (Liger's softmax): no shape read back
    "z = tl.zeros([BLOCK], tl.float32)\nv = v + z.broadcast_to([BLOCK])",
    "n_dims: tl.constexpr = len(v.shape)\nv = v * n_dims",
])
def test_what_tritons_compiler_compiles_passes_s24(body):
    assert _kernel_findings(body) == []


@pytest.mark.parametrize("body", [
    "q = tl.load(x_ptr).to(tl.int32)\nv = v * SCALES[q & 1]",  # a tuple indexed by the data
    "q = tl.load(x_ptr).to(tl.int32)\nd = (tl.int8, tl.int16)[q & 1]\nv = v * math.log2(d.primitive_bitwidth)",
    "q = tl.load(x_ptr).to(tl.int32)\nv = v * tl.static_range(q).stop",
    "q = tl.load(x_ptr).to(tl.int32)\nv = v * len(tl.range(q))",
    "q = tl.load(x_ptr).to(tl.int32)\nr = range(q)",
    "q = tl.load(x_ptr).to(tl.int32)\nfor i in tl.static_range(q):\n    v = v * 2.0",
    "q = tl.load(x_ptr).to(tl.int32)\nz = tl.zeros([q], tl.int8)\nv = v * math.log2(z.shape[0])",
    "z = tl.zeros([1], tl.int8)\nq = tl.load(x_ptr).to(tl.int32)\nv = v * math.log2(z.broadcast_to([q]).shape[0])",
    "q = tl.load(x_ptr).to(tl.int32)\nw = tl.zeros([2, 2], tl.int8)\nr = tl.sum(w, axis=q & 1)\n"
    "v = v * math.log2(r.shape[0])",  # the data picks the axis, the shape carries it out
    "q = tl.load(x_ptr).to(tl.int32)\nv = v * len('x' * q)",
    "q = tl.load(x_ptr).to(tl.int32)\nv = v * tl.constexpr(SCALES[q]).value",
])
def test_block_values_read_into_python_are_refused(body):
    assert _kernel_findings(body), body


HELPER_SHAPES = '''
@triton.jit
def tile(base, n, BC):
    return tl.make_block_ptr(base, (n,), (1,), (0,), (BC,), (0,))


@triton.jit
def rows(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    p = tile(x_ptr, n, {bc})
    v = tl.load(p, boundary_check=(0,))
    tl.store(tile(out_ptr, n, BLOCK), v, boundary_check=(0,))
'''


def test_a_helpers_plain_shape_parameter_must_get_a_compile_time_value_at_every_call():
    def findings(bc: str) -> list[str]:
        source = make(module=HELPER_SHAPES.format(bc=bc), body="rows[(1,)](x, out, x.numel(), BLOCK=1024)")
        return [v.message for v in check_source(source, "cand.py").violations if v.rule == "cuda-source"]

    assert findings("BLOCK") == []
    assert any("gives a shape there" in m for m in findings("tl.load(x_ptr).to(tl.int32)"))


def test_the_kernel_template_still_launches():
    assert "rows[(1,)]" in _kernel("v = v")


REDUCE_HELPER = '''
@triton.jit
def reduce_rows(w, a):
    return tl.sum(w, axis=a)


@triton.jit
def reduce_bit(w, q):
    r = tl.sum(w, axis=q & 1)
    return r


@triton.jit
def rows(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    q = tl.load(x_ptr).to(tl.int32)
    w = tl.zeros([2, 4], tl.float32)
{body}
    tl.store(out_ptr + offs, v, mask=offs < n)
'''


@pytest.mark.parametrize(("body", "refused"), [
    ("r = reduce_rows(w, 0)\nv = v * math.log2(r.shape[0])", False),  # a compile-time axis through a helper
    ("r = reduce_rows(w, q & 1)", True),  # the helper's axis parameter handed the data
    ("r = reduce_bit(w, q)\nv = v * math.log2(r.shape[0])", True),  # the helper returns a data-shaped value
    ("r = reduce_bit(w, q)\nv = v + tl.sum(r, axis=0)", False),  # using it as a block is fine
])
def test_a_helpers_data_chosen_shape_does_not_reach_the_host(body, refused):
    module = REDUCE_HELPER.format(body="\n".join("    " + line for line in body.splitlines()))
    source = make(module="import math\n" + module, body="rows[(1,)](x, out, x.numel(), BLOCK=1024)")
    found = [v.message for v in check_source(source, "cand.py").violations if v.rule == "cuda-source"
             and "kernel `rows`" in v.message]
    assert bool(found) is refused, found


@pytest.mark.parametrize(("body", "refused"), [
    ("for u in range(n, n + 1):\n    v = v * 2.0 ** u", True),  # `**` on a Python int the data set
    ("k: tl.int32 = 0\nfor i in range(n):\n    k += 1\nv = v * k ** 2", True),
    ("v = v * 2.0 ** 3 * BLOCK ** 2", False),  # compile-time powers
    ("for i in range(4):\n    if i > 2:\n        break", True),  # Triton compiles no break
    ("q = tl.load(x_ptr).to(tl.int32)\nif q > 0:\n    NK: tl.constexpr = 2\nelse:\n    NK: tl.constexpr = 1\n"
     "v = v + tl.sum(tl.zeros([NK], tl.float32), axis=0)", True),  # a data-steered constexpr as a shape
    ("if BLOCK > 512:\n    NK: tl.constexpr = 2\nelse:\n    NK: tl.constexpr = 1\n"
     "v = v + tl.sum(tl.zeros([NK], tl.float32), axis=0)", False),  # steered by a compile-time test: fine
    ("for i in range(n):\n    W: tl.constexpr = v.shape[0] // 2\n    v = v + tl.sum(tl.zeros([W], tl.float32), axis=0)",
     False),  # one binding inside a run-time loop: the same value on every pass
])
def test_python_values_the_interpreter_keeps(body, refused):
    assert bool(_kernel_findings(body)) is refused, _kernel_findings(body)
