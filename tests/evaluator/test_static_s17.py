"""Red team s17's mechanisms, each with the honest form that must still pass: a block's interpreter handle (its numpy
array), ``triton.jit`` handed on as a value, names a kernel's scope does not really bind (a comprehension's variable,
a ``with`` body a context manager may cut short, a name read in an assignment target), imported names rebound by a
comprehension's walrus or a match capture, and a method bound twice in its class body."""

from __future__ import annotations

import pytest
from test_static_check import make
from test_static_s13 import FUNCTION, KERNEL

from evaluator.static_check import check_source


def _rules(source: str) -> set[str]:
    return {v.rule for v in check_source(source, "cand.py").violations}


ROWS = '''
{module}

@triton.jit
def rows(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n)
{kernel}
    tl.store(out_ptr + offs, v, mask=offs < n)
'''


def _rows(kernel: str = "", module: str = "") -> str:
    body = "\n".join("    " + line for line in kernel.splitlines())
    return make(module=ROWS.format(module=module, kernel=body), body="rows[(1,)](x, out, x.numel(), BLOCK=1024)")


def test_the_plain_kernel_passes():
    assert _rules(_rows()) == set()


# -- the interpreter's handle of a block (static_kernel_source.check_block_handles) ---------------------------------

@pytest.mark.parametrize("kernel", [
    "d = v.handle.data",
    "d = getattr(v, 'handle').data",
    "d = getattr(v, 'handle', None)",
    "ok = hasattr(v, 'handle')",
    "d = operator.attrgetter('handle.data')(v)",
])
def test_a_blocks_handle_is_refused(kernel):
    assert "introspection" in _rules(_rows(kernel, module="import operator"))


def test_a_blocks_handle_in_a_class_pattern_is_refused():
    module = "def host(v):\n    match v:\n        case tl.tensor(handle=h):\n            return h\n    return None\n"
    assert "introspection" in _rules(make(module=ROWS.format(module=module, kernel=""),
                                          body="rows[(1,)](x, out, x.numel(), BLOCK=1024)\nhost(x)"))


# -- triton.jit only as a decorator or called in place (static_kernel_source.check_jit_values) ----------------------

@pytest.mark.parametrize("bind", ["K = functools.partial(triton.jit)(body)", "JIT = triton.jit\nK = JIT(body)",
                                  "K = [triton.jit][0](body)", "K = (lambda f: f(body))(triton.jit)"])
def test_triton_jit_handed_on_as_a_value_is_refused(bind):
    source = make(module="import functools\n" + KERNEL.format(bind=bind),
                  body="K[(1,)](x, out, x.numel(), BLOCK=1024)")
    assert "cuda-source" in _rules(source)


@pytest.mark.parametrize("bind", ["K = triton.jit(body)", "K = triton.jit(debug=False)(body)"])
def test_triton_jit_called_in_place_passes(bind):
    assert _rules(make(module=KERNEL.format(bind=bind), body="K[(1,)](x, out, x.numel(), BLOCK=1024)")) == set()


# -- names a kernel's scope binds, as Python scopes them (static_check._check_kernel_names) -------------------------

def _uses_np(source: str) -> bool:
    """The kernel-names rule finds np free (other rules may refuse reading it for other reasons)."""
    return any(v.rule == "cuda-source" and "uses np, which this file does not always bind" in v.message
               for v in check_source(source, "cand.py").violations)


@pytest.mark.parametrize(("kernel", "module"), [
    ("_unused = [0 for np in ()]\nv = np.exp(v)", ""),  # the comprehension's own variable
    ("_unused = [(lambda: (np := 0)) for _ in ()]\nv = np.exp(v)", ""),  # a lambda's walrus binds in the lambda
    ("v = np.exp(v)", "import contextlib\nwith contextlib.suppress(ZeroDivisionError):\n"
                      "    S = 1 // 0\n    np = None\n"),
    ("v = np.exp(v)", "LIMITS = {}\nLIMITS[1 or np] = 8192\n"),  # np only read in the target
    ("v = np.exp(v)", "TABLE = [0]\nTABLE[0], (np.x) = 1, 2\n"),
])
def test_a_name_the_kernels_scope_does_not_really_bind_is_free(kernel, module):
    assert _uses_np(_rows(kernel, module))


@pytest.mark.parametrize(("kernel", "module"), [
    ("np = 2.0\nv = v * np", ""),  # a local of the kernel
    ("v = v * np", "np = 2.0\n"),  # always bound at module level
    ("v = v * np", "import contextlib\nwith contextlib.nullcontext(2.0) as np:\n    pass\n"),  # a with's as target
])
def test_a_name_bound_where_python_binds_it_is_not_the_interpreters(kernel, module):
    assert not _uses_np(_rows(kernel, module))


# -- imported names rebound where check_rebinding did not look (static_uses.binding_sites) ---------------------------

@pytest.mark.parametrize("rebind", ["HOOKS = [wraps := print for _ in (0,)]",
                                    "match print:\n    case wraps:\n        pass",
                                    "match [print]:\n    case [*wraps]:\n        pass",
                                    "match {}:\n    case {**wraps}:\n        pass"])
def test_an_import_rebound_by_a_walrus_or_a_match_capture_is_refused(rebind):
    assert "patching" in _rules(make(module="from functools import wraps\n" + rebind + "\n"))


def test_a_walrus_inside_a_function_is_its_own_local():
    module = "from functools import wraps\n\ndef f(xs):\n    return [wraps := x for x in xs]\n"
    assert "patching" not in _rules(make(module=module, body="f([1])"))


# -- one binding of each method in its class body (static_structure.check_class_members) ----------------------------

@pytest.mark.parametrize("rebind", ["forward = staticmethod(print)",
                                    "@staticmethod\ndef forward(ctx, x):\n    return x",
                                    "for forward in ():\n    pass", "from os import sep as forward"])
def test_a_method_bound_again_in_its_class_body_is_refused(rebind):
    module = FUNCTION.format(forward="") + "".join("    " + line + "\n" for line in rebind.splitlines())
    assert "patching" in _rules(make(module=module, body="out = _Rows.apply(x)"))


def test_a_propertys_accessors_are_one_member():
    module = ("class Scale:\n    def __init__(self):\n        self._s = 1.0\n\n    @property\n    def s(self):\n"
              "        return self._s\n\n    @s.setter\n    def s(self, value):\n        self._s = value\n")
    assert "patching" not in _rules(make(module=module, body="Scale().s = 2.0"))
