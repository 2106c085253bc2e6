"""Module-level tables no running code reads (evaluator/static_unread.py): fla's activation table ``ACT2FN = {'relu':
F.relu, 'gelu': fast_gelu_impl, ...}`` and its ``sigmoidglu_linear = SigmoidGLULinearFunction.apply`` alias keep
references nobody takes out, so the references are never called and what they name never runs. Each attack below
reads the table (or makes evaluating it run code) some way a reward-hacking author who read the rule would try, and
must stay refused with the finding the table itself earns.

Every honest case is the shape fla's module uses, written anew (no library code is copied here)."""

from __future__ import annotations

import ast

import pytest
from test_static_check import make

from evaluator.static_check import check_source
from evaluator.static_liveness import unread_bindings
from evaluator.static_model import build_model
from evaluator.static_unread import deferred_bindings

RELU_KEPT = "keeps a reference to PyTorch op `torch.nn.functional.relu`"


def _rules(source: str) -> list[tuple[str, str]]:
    return [(v.rule, v.message) for v in check_source(source, "cand.py").violations]


def _relu_kept(found: list[tuple[str, str]]) -> bool:
    return any(rule == "torch-compute" and RELU_KEPT in message for rule, message in found)


def _tanh_runs(found: list[tuple[str, str]]) -> bool:
    return any(rule == "torch-compute" and "torch.tanh" in message for rule, message in found)


# fla's shape: an autograd Function whose forward calls a @torch.compile helper (torch.tanh), aliased as
# `gelu_impl = GeluFn.apply`, and an activation table holding a torch op and the alias.
_FN = ("@torch.compile\ndef gelu_fwd(x):\n    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x))\n\n"
       "class GeluFn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
       "        return gelu_fwd(x)\n\n    @staticmethod\n    def backward(ctx, g):\n        return g\n\n"
       "gelu_impl = GeluFn.apply\n")
_TABLE = _FN + "ACT = {'relu': F.relu, 'gelu': gelu_impl, 'scale': 2.0, 'pair': (F.relu, None)}\n"

UNREAD_HONEST = {
    "fla's activation table nothing reads": _TABLE,
    "an autograd Function's apply aliased, the alias unread": _FN,
    "a table read only in a function nothing calls": _TABLE + "\ndef get_act(name):\n    return ACT[name]\n",
    "a table read only by another unread table": _TABLE + "ACTS = [ACT, gelu_impl]\n",
    "a plain reference nothing reads (was refused as a stored reference)": "ACT = F.relu\n",
    "a function kept in a table nothing reads (was refused as a stored reference)": (
        "def helper(t):\n    return torch.tanh(t)\n\nTABLE = {'g': helper}\n"),
    "a docstring naming the table": '"""ACT maps names to activations."""\n' + _TABLE,
}


@pytest.mark.parametrize("module", list(UNREAD_HONEST.values()), ids=list(UNREAD_HONEST))
def test_unread_table_is_accepted(module):
    assert _rules(make(module=module)) == []


UNREAD_ATTACKS = {
    # against "no running code reads the name"
    "read on the forward path": dict(module=_TABLE, body="out = ACT['relu'](out)"),
    "read through an alias the forward path reads": dict(module=_TABLE + "ALIAS = ACT\n",
                                                         body="out = ALIAS['relu'](out)"),
    "a loop over .values() on the forward path": dict(module=_TABLE,
                                                      body="for f in ACT.values():\n    out = out if f else out"),
    "read by a helper the forward path calls": dict(module=_TABLE + "\ndef act(t):\n    return ACT['gelu'](t)\n",
                                                    body="out = act(out)"),
    "read by module-level code": dict(module=_TABLE + "FIRST = list(ACT)\n"),
    "a default argument (runs at definition)": dict(
        module=_TABLE + "\ndef helper(t, table=ACT):\n    return table['relu'](t)\n"),
    "a decorator argument (runs at definition)": dict(
        module=_TABLE + "\ndef deco(table):\n    return lambda f: f\n\n@deco(ACT)\ndef helper(t):\n    return t\n"),
    "kept on a class": dict(module=_TABLE + "\nclass Holder:\n    table = ACT\n"),
    "read by a lambda on self": dict(module=_TABLE, init="self.act = lambda t: ACT['relu'](t)",
                                     body="out = self.act(out)"),
    "read in a function that a read table keeps": dict(
        module=_TABLE + "\ndef unused():\n    return ACT['relu']\n\nHOOKS = [unused]\nN = len(HOOKS)\n"),
    "subscript-assigned at module level (a read of the name)": dict(module=_TABLE + "ACT['elu'] = F.elu\n"),
    # against "named by nothing that looks names up"
    "globals() with the literal name": dict(module=_TABLE, body="out = globals()['ACT']['relu'](out)"),
    "globals() with a computed name": dict(module=_TABLE, body="out = globals()['AC' + 'T']['relu'](out)"),
    "vars() of the module": dict(module=_TABLE + "NS = vars()\n", body="out = NS['A' + 'CT']['relu'](out)"),
    "getattr on the module, literal name": dict(module="import sys\n" + _TABLE,
                                                body="out = getattr(sys.modules[__name__], 'ACT')['relu'](out)"),
    "a function's __globals__": dict(module=_TABLE + "\ndef helper(t):\n    return t\n",
                                     body="out = helper.__globals__['AC' + 'T']['relu'](out)"),
    "a generator frame's f_globals": dict(module=_TABLE + "\ndef gen():\n    yield 1\n\nG = gen().gi_frame.f_globals\n",
                                          body="out = G['AC' + 'T']['relu'](out)"),
    "__all__ naming it": dict(module=_TABLE + "__all__ = ['ACT']\n"),
    "a string annotation naming it": dict(module=_TABLE + "\ndef helper(t: 'ACT') -> None:\n    return None\n"),
    # against "bound once, to the table"
    "bound twice": dict(module=_TABLE + "ACT = {'relu': F.relu}\n"),
    "augmented afterwards": dict(module=_TABLE + "ACT |= {'elu': F.elu}\n"),
    "rebound by a function through global": dict(module=_TABLE + "\ndef swap():\n    global ACT\n    ACT = {}\n"),
    "a parameter of the same name": dict(module=_TABLE + "\ndef helper(ACT):\n    return ACT\n",
                                         body="out = helper(out)"),
}


@pytest.mark.parametrize("case", list(UNREAD_ATTACKS.values()), ids=list(UNREAD_ATTACKS))
def test_table_that_can_be_read_is_still_refused(case):
    found = _rules(make(**case))
    assert _relu_kept(found), found


# against "evaluating the value calls nothing of the candidate's" (and then what it names is followed)
_APPLY_PROPERTY = ("class Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
                   "        return torch.tanh(x)\n\n    @classmethod\n    @property\n    def apply(cls):\n"
                   "        return cls.forward(None, torch.ones(2))\n\n")
VALUE_ATTACKS = {  # the module, and the binding that must not be taken for unread
    "an autograd Function binding its own apply (a class property runs on reading it)": (
        _APPLY_PROPERTY + "TABLE = {'f': Fn.apply}\n", "TABLE"),
    "an autograd Function with a metaclass keyword": (_FN.replace(
        "class GeluFn(torch.autograd.Function):", "class GeluFn(torch.autograd.Function, metaclass=type):")
        + "TABLE = {'g': gelu_impl}\n", "gelu_impl"),
    "an autograd Function under a class decorator": (
        _FN.replace("class GeluFn(", "@print\nclass GeluFn(") + "TABLE = {'g': gelu_impl}\n", "gelu_impl"),
    "a call in the value": (_FN + "TABLE = {'g': gelu_impl, 'n': len([gelu_impl])}\n", "TABLE"),
    "a set display (hashes its elements)": (_FN + "TABLE = {gelu_impl}\n", "TABLE"),
    "a dict unpacked into it": (_FN + "BASE = {'g': gelu_impl}\nTABLE = {**BASE}\n", "TABLE"),
    "an object's attribute (a property may run)": (
        "class Box:\n    @property\n    def act(self):\n        return torch.tanh(torch.ones(2))\n\n"
        "BOX = Box()\nTABLE = {'a': BOX.act}\n", "TABLE"),
}


def _deferred(source: str) -> set[str]:
    """Names the rule may take for unread, if no running code reads them."""
    tree = ast.parse(source)
    return set(deferred_bindings(tree, build_model(tree), "ModelNew"))


def _unread(source: str) -> set[str]:
    """Names the checker takes for unread (no running code reads them)."""
    tree = ast.parse(source)
    ids = unread_bindings(tree, build_model(tree), "ModelNew")
    return {s.targets[0].id for s in tree.body if id(s) in ids and isinstance(s, ast.Assign)
            and isinstance(s.targets[0], ast.Name)}  # fmt: skip


@pytest.mark.parametrize(("module", "name"), list(VALUE_ATTACKS.values()), ids=list(VALUE_ATTACKS))
def test_table_whose_value_runs_code_is_still_refused(module, name):
    """The table is never taken for unread, so what it names is followed as before (the Function's forward is on the
    forward path; the property, module-level code, is judged as that)."""
    source = make(module=module)
    assert name not in _unread(source)
    found = _rules(source)
    if "BOX" not in module:
        assert _tanh_runs(found) or any(rule == "introspection" for rule, _ in found), found


def test_module_name_rebound_before_the_table_is_refused():
    """``F.relu`` reads a module only if the last binding of ``F`` before the table is that import (a candidate
    object's property would run when the table is made)."""
    source = make(module="class Box:\n    relu = None\n\nF = Box()\nACT = {'relu': F.relu}\n")
    assert "ACT" not in _deferred(source)
    assert _rules(source), "rebinding the import is refused (patching)"
    assert "ACT" in _deferred(make(module="ACT = {'relu': F.relu}\n"))


@pytest.mark.parametrize("module", [
    "from math import *\nACT = {'relu': F.relu}\n",
    "def swap():\n    global F\n    F = None\n\nACT = {'relu': F.relu}\n",
    "try:\n    import gc as F\nexcept ImportError:\n    pass\nACT = {'relu': F.relu}\n",
], ids=["a star import may have rebound it", "a function rebinds it through global", "rebound by an import in a try"])
def test_module_name_that_may_be_something_else_is_no_module_read(module):
    source = make(module=module)
    assert "ACT" not in _deferred(source)
    assert _relu_kept(_rules(source)) or _rules(source)


def test_table_read_on_the_forward_path_makes_its_functions_run():
    """Reading the table on the forward path makes the autograd Function it names reachable: its forward's torch
    ops are judged as forward-path code again."""
    found = _rules(make(module=_TABLE, body="out = ACT['gelu'](out)"))
    assert _tanh_runs(found) and _relu_kept(found), found
