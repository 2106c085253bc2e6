"""Branches that never run in the verifier, read through decorators (evaluator/static_wrappers.py), literal
arguments and flags (evaluator/static_liveness.py): kernel libraries' varlen paths pass, and every walk-around
that makes such a branch run is still refused."""

# ruff: noqa: E501 (the cases keep their source lines whole)
from __future__ import annotations

import ast
import textwrap

import pytest
from test_static_check import make, marked_line

from evaluator.static_check import build_model, check_source
from evaluator.static_wrappers import hands_first_only, transparent

# A varlen helper that computes with torch (fla's prepare_lens / chunk indices): reached only when cu_seqlens is given.
_INDEX = """
def prepare_lens(cu_seqlens):
    return torch.diff(cu_seqlens)


def chunk_indices(cu_seqlens, size):
    lens = prepare_lens(cu_seqlens)
    return torch.cat([torch.arange(n) for n in (lens + size - 1) // size])
"""

_INPUT_GUARD = """
import contextlib
import functools
import inspect


def _contiguous_if_needed(arg, skip):
    if isinstance(arg, torch.Tensor) and not skip:
        return arg.contiguous()
    return arg


def input_guard(fn=None, *, no_guard_contiguous=False):
    def decorator(fn):
        names = list(inspect.signature(fn).parameters)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            processed = []
            for i, arg in enumerate(args):
                skip = no_guard_contiguous is True or (i < len(names) and names[i] == "skip")
                processed.append(_contiguous_if_needed(arg, skip))
            named = {}
            for k, v in kwargs.items():
                named[k] = _contiguous_if_needed(v, no_guard_contiguous is True)
            tensor = None
            for arg in args:
                if isinstance(arg, torch.Tensor):
                    tensor = arg
                    break
            with contextlib.nullcontext():
                return fn(*processed, **named)

        return wrapper

    if fn is not None:
        return decorator(fn)
    return decorator
"""

_ENSURE_CONTIGUOUS = """
import functools


def ensure_contiguous(fn):
    @functools.wraps(fn)
    def wrapper(ctx, *args, **kwargs):
        def maybe_contiguous(x):
            return x.contiguous() if isinstance(x, torch.Tensor) else x

        args = [maybe_contiguous(a) for a in args]
        kwargs = {k: maybe_contiguous(v) for k, v in kwargs.items()}
        return fn(ctx, *args, **kwargs)

    return wrapper
"""

_DISPATCH = """
import functools
import inspect

_TABLES = {}


class Registry:
    def __init__(self, name):
        self.name = name
        self.backends = []

    def dispatch(self, default):
        label = default.__name__

        @functools.wraps(default)
        def wrapper(*args, **kwargs):
            for backend in self.backends:
                if backend.accepts(label, *args, **kwargs):
                    return backend.run(*args, **kwargs)
            return default(*args, **kwargs)

        return torch.compiler.disable(wrapper)


def dispatch(entry):
    if isinstance(entry, str):
        return Registry(entry).dispatch
    registry = Registry(entry.__module__)
    _TABLES[inspect.unwrap(entry)] = registry
    return registry.dispatch(entry)
"""

_TENSOR_CACHE = """
import collections
import functools


def tensor_cache(fn):
    kept = collections.deque(maxlen=4)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        for old_args, old_kwargs, result in kept:
            if len(args) == len(old_args) and all(a is b for a, b in zip(args, old_args)):
                return result
        result = fn(*args, **kwargs)
        kept.append((args, kwargs, result))
        return result

    return wrapper
"""

_ROTARY = """
{decorators}
def rotary_fwd(x, cos, sin, offsets=0, cu_seqlens=None, chunks=None):
    is_varlen = cu_seqlens is not None
    if isinstance(offsets, torch.Tensor):
        torch._assert_async(torch.all(offsets >= 0))
    if chunks is None and is_varlen:
        chunks = chunk_indices(cu_seqlens, 64)
    n = len(chunks) if is_varlen else triton.cdiv(x.shape[0], 64)
    y = torch.empty_like(x)
    copy_kernel[(n,)](x, y, x.numel(), BLOCK=1024)
    return y


class RotaryFunction(torch.autograd.Function):
    @staticmethod
    {forward_decorator}
    def forward(ctx, x, cos, sin, offsets=0, cu_seqlens=None, chunks=None):
        y = rotary_fwd(x, cos, sin, offsets=offsets, cu_seqlens=cu_seqlens, chunks=chunks)
        ctx.save_for_backward(cos, sin, cu_seqlens)
        ctx.offsets = offsets
        return y

    @staticmethod
    {forward_decorator}
    def backward(ctx, dy):
        cos, sin, cu_seqlens = ctx.saved_tensors
        return rotary_fwd(dy.clone(), cos, sin, ctx.offsets, cu_seqlens), None, None, None, None, None


def rotary(x, cos, sin, offsets=0, cu_seqlens=None):
    return RotaryFunction.apply(x, cos, sin, offsets, cu_seqlens, None)
"""


def _library(decorators: str, forward_decorator: str, helpers: str) -> str:
    rotary = _ROTARY.format(decorators=decorators, forward_decorator=forward_decorator).replace("\n\n\n", "\n\n\n")
    module = textwrap.dedent(helpers) + _INDEX + rotary
    return make(module=module, body="out = rotary(x, x, x)")


HONEST = {
    "fla input_guard, registry dispatch, tensor_cache": _library(
        "@dispatch", "@input_guard", _INPUT_GUARD + _DISPATCH + _TENSOR_CACHE),
    "Liger ensure_contiguous": _library("", "@ensure_contiguous", _ENSURE_CONTIGUOUS),
    "input_guard on the helper as well": _library("@input_guard", "@input_guard", _INPUT_GUARD),
    "functools.cache on the helper": _library("@functools.cache", "@ensure_contiguous",
                                              _ENSURE_CONTIGUOUS),
}


@pytest.mark.parametrize("name", list(HONEST))
def test_library_varlen_paths_pass(name):
    report = check_source(HONEST[name], "cand.py")
    assert report.ok, report.violations


def _refused(source: str, rule: str = "torch-compute") -> None:
    report = check_source(source, "cand.py")
    hits = [v for v in report.violations if v.rule == rule]
    assert marked_line(source) in {v.line for v in hits}, report.violations


_HELPER = "def helper(t, w=None, offsets=0):\n"


WALKAROUNDS = {
    # the branch runs: a caller passes a tensor
    "a caller passes the tensor": dict(
        module=_HELPER + "    if isinstance(offsets, torch.Tensor):\n        return torch.softmax(offsets, -1)  # HERE\n"
        "    return t", body="out = helper(out)\nout = helper(out, offsets=x)"),
    # a flag bound twice (or rebound by a walrus, a loop) is no flag
    "a flag rebound": dict(
        module=_HELPER + "    on = w is not None\n    on = True\n    if on:\n        return torch.softmax(t, -1)  # HERE\n"
        "    return t", body="out = helper(out)"),
    "a flag rebound by a walrus": dict(
        module=_HELPER + "    on = w is not None\n    if (on := True):\n        return torch.softmax(t, -1)  # HERE\n"
        "    return t", body="out = helper(out)"),
    "a flag bound in a loop": dict(
        module=_HELPER + "    for on in (w is not None, True):\n        pass\n    if on:\n"
        "        return torch.softmax(t, -1)  # HERE\n    return t", body="out = helper(out)"),
    # torch shadowed: isinstance against another object's Tensor
    "torch shadowed": dict(
        module="class _Fake:\n    Tensor = int\n\n\n" + _HELPER + "    torch = _Fake\n"
        "    if isinstance(offsets, torch.Tensor):\n        return t.softmax(-1)  # HERE\n    return t",
        body="out = helper(out)"),
    # a helper reached from a dead branch and from running code
    "a helper also called where it runs": dict(
        module="def soft(t):\n    return torch.softmax(t, -1)  # HERE\n\n\n" + _HELPER + "    if w is not None:\n"
        "        return soft(w)\n    return t", body="out = helper(out)\nout = soft(out)"),
    # a decorator that keeps the wrapper where another caller finds it
    "a wrapper kept in a table": dict(
        module="import functools\nKEPT = []\n\n\ndef deco(fn):\n    @functools.wraps(fn)\n"
        "    def wrapper(*args, **kwargs):\n        return fn(*args, **kwargs)\n    KEPT.append(wrapper)\n"
        "    return wrapper\n\n\n@deco\n" + _HELPER + "    if w is not None:\n"
        "        return torch.softmax(w, -1)  # HERE\n    return t", body="out = helper(out)\nout = KEPT[0](out, x)"),
    # a converter that is no identity for None
    "a converter that makes a tensor of None": dict(
        module="import functools\n\n\ndef conv(a):\n    if a is None:\n        return torch.ones(3)\n    return a\n\n\n"
        "def deco(fn):\n    @functools.wraps(fn)\n    def wrapper(*args, **kwargs):\n"
        "        return fn(*[conv(a) for a in args], **kwargs)\n    return wrapper\n\n\n@deco\n" + _HELPER +
        "    if w is not None:\n        return torch.softmax(t, -1)  # HERE\n    return t",
        body="out = helper(out, None)"),
    # arguments dropped on the way: positions shift onto a None parameter
    "an argument dropped": dict(
        module="import functools\n\n\ndef deco(fn):\n    @functools.wraps(fn)\n    def wrapper(*args, **kwargs):\n"
        "        kept = []\n        for a in args:\n            if a is not None:\n                kept.append(a)\n"
        "        return fn(*kept, **kwargs)\n    return wrapper\n\n\n@deco\n" + _HELPER +
        "    if w is not None:\n        return torch.softmax(w, -1)  # HERE\n    return t",
        body="out = helper(None, out)"),
    # the wrapper's defaults reach the function in place of its own
    "a wrapper default": dict(
        module="import functools\n\n\ndef deco(fn):\n    @functools.wraps(fn)\n"
        "    def wrapper(t, w=torch.ones(2)):\n        return fn(t, w)\n    return wrapper\n\n\n@deco\n" + _HELPER +
        "    if w is not None:\n        return torch.softmax(w, -1)  # HERE\n    return t", body="out = helper(out)"),
    # the function reached through __wrapped__ with other arguments
    "__wrapped__": dict(
        module="import functools\n\n\n@functools.cache\n" + _HELPER + "    if w is not None:\n"
        "        return torch.softmax(w, -1)  # HERE\n    return t",
        body="out = helper(out)\nout = helper.__wrapped__(out, x)"),
}


@pytest.mark.parametrize("name", list(WALKAROUNDS))
def test_a_branch_that_runs_is_judged(name):
    _refused(make(**WALKAROUNDS[name]))


def _decorator(source: str, name: str, params: str = "*args, **kwargs") -> tuple[ast.expr, object]:
    """The decorator node of a def decorated by ``@name`` after ``source``, and the module's model."""
    tree = ast.parse("import torch\n" + textwrap.dedent(source) + f"\n\n@{name}\ndef target({params}):\n    pass\n")
    target = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "target")
    return target.decorator_list[0], build_model(tree)


@pytest.mark.parametrize(("source", "name", "expected"), [  # noqa: PT006
    (_INPUT_GUARD, "input_guard", True), (_ENSURE_CONTIGUOUS, "ensure_contiguous", True),
    (_DISPATCH, "dispatch", True), (_TENSOR_CACHE, "tensor_cache", True),
    ("def deco(fn):\n    return fn\n", "deco", True),
    ("def deco(fn):\n    fn(None)\n    return fn\n", "deco", False),
    ("import functools\n\n\ndef deco(fn):\n    @functools.wraps(fn)\n    def w(*a, **k):\n        k['x'] = 1\n"
     "        return fn(*a, **k)\n    return w\n", "deco", False),
    ("import functools\n\n\ndef deco(fn):\n    @functools.wraps(fn)\n    def w(*a, **k):\n"
     "        return fn(*a[1:], **k)\n    return w\n", "deco", False),
    ("import functools\n\n\ndef deco(fn):\n    @functools.wraps(fn)\n    def w(*a, **k):\n"
     "        return fn(*a, **k)\n    w(1)\n    return w\n", "deco", False),
    ("import functools\n\n\ndef deco(fn):\n    @functools.wraps(fn)\n    def w(*a, **k):\n"
     "        return fn(*a, **k)\n    return functools.partial(w, 1)\n", "deco", False),
    ("import functools\n\n\ndef other(*a):\n    return a[0]\n\n\ndef deco(fn):\n    @functools.wraps(fn)\n"
     "    def w(*a, fn=other):\n        return fn(*a)\n    return w\n", "deco", False),
    ("import functools\n\n\ndef other(*a):\n    return a[0]\n\n\ndef deco(fn):\n    return other\n", "deco", False),
], ids=["input_guard", "ensure_contiguous", "dispatch", "tensor_cache", "returns it", "calls it", "changes kwargs",
        "drops an argument", "calls the wrapper", "a partial of the wrapper", "a wrapper calling another function",
        "returns another function"])
def test_transparent_decorators(source, name, expected):
    decorator, model = _decorator(source, name, "ctx, *args, **kwargs" if name == "ensure_contiguous" else "x, w=None")
    assert transparent(decorator, model) is expected


def test_ctx_reaches_only_the_forward_through_input_guard():
    decorator, model = _decorator(_INPUT_GUARD, "input_guard")
    assert hands_first_only(decorator, model)
    leaky = _INPUT_GUARD.replace("            tensor = None\n", "            tensor = None\n            HELD.append(args)\n")
    decorator, model = _decorator("HELD = []\n" + leaky, "input_guard")
    assert not hands_first_only(decorator, model)


# -- red team s30s: the inference attacked, each case what the first version of static_wrappers let through ---------

_SOFT = """
def helper(x, w=None):
    if w is not None:
        return torch.softmax(x, -1)  # HERE
    return x
"""

RED_TEAM = {
    "a default named like a caller's None parameter": (
        "W = 1.0\n\n\n" + _SOFT.replace("w=None", "w=W") + "\n\ndef outer(x, W=None):\n    return helper(x)\n",
        "out = outer(out)"),
    "a wrapper that rebinds its parameter": (
        "import functools\n\n\ndef deco(fn):\n    @functools.wraps(fn)\n    def wrapper(x, w):\n        w = 2.0\n"
        "        return fn(x, w)\n    return wrapper\n\n\n@deco" + _SOFT, "out = helper(out, None)"),
    "a wrapper whose parameters are named otherwise": (
        "import functools\n\n\ndef deco(fn):\n    @functools.wraps(fn)\n    def wrapper(a, b):\n"
        "        return fn(a, b)\n    return wrapper\n\n\n@deco" + _SOFT, "out = helper(out, b=2.0)"),
    "an instance attribute over the registry's method": (
        "import functools\n\n\ndef evil(fn):\n    @functools.wraps(fn)\n    def wrapper(x, w=None):\n"
        "        return fn(x, 2.0)\n    return wrapper\n\n\nclass Reg:\n    def __init__(self):\n        self.m = evil\n\n"
        "    def m(self, fn):\n        return fn\n\n\ndef deco(fn):\n    r = Reg()\n    return r.m(fn)\n\n\n@deco" + _SOFT,
        "out = helper(out)"),
    "a loop item rebound before it is kept": (
        "import functools\n\n\ndef deco(fn):\n    @functools.wraps(fn)\n    def wrapper(*args, **kwargs):\n        new = []\n"
        "        for a in args:\n            a = 2.0 if a is None else a\n            new.append(a)\n"
        "        return fn(*new, **kwargs)\n    return wrapper\n\n\n@deco" + _SOFT, "out = helper(out, None)"),
    "a keyword item rebound before it is stored": (
        "import functools\n\n\ndef deco(fn):\n    @functools.wraps(fn)\n    def wrapper(*args, **kwargs):\n        d = {}\n"
        "        for k, v in kwargs.items():\n            v = 2.0\n            d[k] = v\n        return fn(*args, **d)\n"
        "    return wrapper\n\n\n@deco" + _SOFT, "out = helper(out, w=None)"),
    "a class body rebinding the decorator's name": (
        "import functools\n\n\ndef evil(fn):\n    @functools.wraps(fn)\n    def wrapper(*args):\n"
        "        return fn(args[0], args[1], 2.0)\n    return wrapper\n\n\ndef deco(fn):\n    @functools.wraps(fn)\n"
        "    def wrapper(*args, **kwargs):\n        return fn(*args, **kwargs)\n    return wrapper\n\n\n"
        "class Fn(torch.autograd.Function):\n    deco = evil\n\n    @staticmethod\n    @deco\n"
        "    def forward(ctx, x, w=None):\n        if w is not None:\n            return torch.softmax(x, -1)  # HERE\n"
        "        return x\n", "out = Fn.apply(out)"),
    "the function itself handed out by its wrapper": (
        "import functools\n\n\ndef deco(fn):\n    @functools.wraps(fn)\n    def wrapper(*args, **kwargs):\n"
        "        if args[0] is None:\n            return fn\n        return fn(*args, **kwargs)\n    return wrapper\n\n\n@deco"
        + _SOFT, "raw = helper(None)\nout = raw(out, 2.0)"),
    "a call in a dead function's default": (
        _SOFT + "\n\ndef unused(f=(G := lambda x: helper(x, 2.0))):\n    pass\n", "out = helper(out)\nout = G(out)"),
    "a lambda kept by a walrus in a dead function's default": (
        _SOFT.replace("w=None", "w=2.0").replace("if w is not None", "if w") +
        "\n\ndef unused(f=(G := lambda x: helper(x))):\n    pass\n", "out = G(out)"),
    "a helper without positional parameters": (
        "import functools\n\n\ndef deco(fn):\n    @functools.wraps(fn)\n    def wrapper(*args, **kwargs):\n"
        "        def h(*a):\n            return a[0]\n\n        new = [h(a) for a in args]\n        return fn(*new, **kwargs)\n"
        "    return wrapper\n\n\n@deco" + _SOFT, "out = helper(out, x)"),
}


@pytest.mark.parametrize("name", list(RED_TEAM))
def test_red_team_walkarounds_are_refused(name):
    module, body = RED_TEAM[name]
    _refused(make(module=module, body=body))


def test_an_older_input_guard_with_a_generator_passes():
    module = """
import functools


def input_guard(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        contiguous_args = (i if not isinstance(i, torch.Tensor) else i.contiguous() for i in args)
        contiguous_kwargs = {k: (v if not isinstance(v, torch.Tensor) else v.contiguous()) for k, v in kwargs.items()}
        return fn(*contiguous_args, **contiguous_kwargs)

    return wrapper


def prepare_lens(cu_seqlens):
    return cu_seqlens[1:] - cu_seqlens[:-1]


def copy_fwd(x, cu_seqlens=None):
    out = torch.empty_like(x)
    lens = prepare_lens(cu_seqlens) if cu_seqlens is not None else None
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out


class CopyFunction(torch.autograd.Function):
    @staticmethod
    @input_guard
    def forward(ctx, x, cu_seqlens=None):
        return copy_fwd(x, cu_seqlens=cu_seqlens)
"""
    report = check_source(make(module=module, body="out = CopyFunction.apply(out)"), "cand.py")
    assert report.ok, report.violations
