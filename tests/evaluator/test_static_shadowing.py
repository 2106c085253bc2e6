"""Binding a builtin's name is refused (evaluator/static_shadowing.py): the checks read isinstance, hasattr,
staticmethod... by their spelling (red team s9f: a shadowed isinstance ran a "never true" DTensor branch, a
shadowed hasattr kept the module it was handed, a shadowed staticmethod hid a live function)."""

from __future__ import annotations

import pytest
from test_static_check import make

from evaluator.static_check import check_source


def _rules(source: str) -> list[str]:
    return [v.rule for v in check_source(source, "cand.py").violations]


ATTACKS = {
    "a function named isinstance": dict(module="def isinstance(obj, kind):\n    return True\n"),
    "hasattr by assignment": dict(module="import builtins\nhasattr = lambda obj, name: True\n"),
    "staticmethod as a class": dict(module="class staticmethod:\n    def __init__(self, fn):\n        self.fn = fn\n"),
    "a parameter named getattr": dict(module="def helper(getattr, x):\n    return getattr(x, 'exp')\n"),
    "an import alias": dict(module="from functools import partial as super\n"),
    "a loop target": dict(module="for type in (int, float):\n    pass\n"),
    "except as": dict(module="try:\n    pass\nexcept Exception as property:\n    pass\n"),
    "a walrus": dict(module="X = (callable := len)\n"),
    "a global": dict(module="def f():\n    global iter\n    iter = None\n"),
    "a match capture": dict(module="def f(v):\n    match v:\n        case [*next]:\n            return next\n"),
}


@pytest.mark.parametrize("parts", list(ATTACKS.values()), ids=list(ATTACKS))
def test_binding_a_builtins_name_is_refused(parts):
    assert "dangerous-builtin" in _rules(make(**parts))


HONEST = {
    "forward(self, input)": dict(module="def helper(input, all=None, filter=None, id=0, max=1.0, min=0.0):\n"
                                        "    return input\n"),
    "an exception class of one's own": dict(module="class TimeoutError(Exception):\n    pass\n"),
}


@pytest.mark.parametrize("parts", list(HONEST.values()), ids=list(HONEST))
def test_names_programs_reuse_are_fine(parts):
    assert "dangerous-builtin" not in _rules(make(**parts))
