"""False-reject hunts and the red teams that attacked their fixes, as static checks: one folder per session.

``static_s31/honest/``: honest patterns of kernel libraries the checker used to refuse (a submodule named like a
tensor method, ``torch.finfo(...).min``, ``abc.ABC``, a custom-op namespace of one's own starting with "torch", a final
mean over a launcher's per-row losses, a reference method nothing names, template methods, stored bound methods,
kernel tables, a registry class decorator): each passes and launches a kernel. (Session 32's honest patterns are
suite candidates, ``tests/candidates/honest/s32_*``, run whole.)

``static_s31/redteam/``: walk-arounds of those relaxations (a parameter named ``self``, a class attribute or
``add_module`` shadowing the submodule, a match capture rebinding a finfo name, torch's lazily registered ``onnx``
namespace, a fallback ``def`` for an import that fails only under the verifier, methods Python calls unnamed through
``**obj``/``print(file=)``/``closing``, a launch table rebound or shadowed, a registered class patched through its
table). (Full reductions of an own function's result, ``r5`` in the red team, pass the static layer on purpose: the
run time refuses torch ops on large tensors.)

(Session 32's walk-arounds are edits of its honest candidates: ``test_static_walkarounds_s32.py``.)

``static_s33/honest/``: a property with an ``@x.setter`` in ModelNew, a kernel bound as a class attribute and launched
as ``self.KERNEL[grid]``, a literal table of one class's launcher objects (``self.impls[name].run(x)``).
``static_s33/redteam/``: setters, getters, ``.getter`` accessors and deleters that compute with torch, a property
named ``forward``; the class attribute overridden in a subclass, stored on the instance or ``type(self)``, set by
``setattr`` or ``locals()``, also bound at module level; tables of two classes, changed through ``dict.update``,
``setdefault``, an alias or a function they are handed to, and a launcher whose method computes with torch. The
``rt_*`` files come from a red team of those relaxations: stores, ``del`` and method calls through a name holding
``self`` (``me = self``, a walrus, a loop or comprehension target, a function's parameter), a property binding the
table, a namedtuple or dataclass field of the kernel's name, ``getattr(self, "impls")[k] = ...``, a ``get`` default
from elsewhere; and honest variations of the three patterns (``ClassVar`` kernels, inherited class attributes, ``get``
with a default of the table's own); then ``ModelNew.KERNEL[grid]`` and a class-body launcher instance (honest), and
the holes they sat beside (a class-body instance bound twice, one whose ``__call__`` computes, a factory's instance
whose method computes); ``lib_*``: a false-reject hunt in library styles (``from triton.runtime import driver``,
``import math`` in a function, a heuristics lambda naming ``torch``, plain mixins, an inherited forward's bookkeeping)
and their walk-arounds (the driver's other attributes, local imports of torch, heuristics and pre-hooks that compute,
mixins binding ``__call__``, ``forward``, ``_apply`` or ``__getattr__``); ``rtb_*``: a second red team (an inherited
forward recursing through ``super(ModelNew, self)`` or ``ModelNew.forward``, hooks that are methods of module-level
instances, and a factory-made helper reached through names the call graph cannot type). Most start ``# head: NAME``:
the imports, kernel and launcher they share are ``static_s33/heads/NAME.py``.

Each walk-around is refused by the static checker itself, not left to the run time.
"""

from pathlib import Path

import pytest

from evaluator.static_check import check_source

HERE = Path(__file__).resolve().parent  # static_s<N>/: static-only fixtures, not suite candidates (no task run)


def _fixtures(kind: str) -> list[Path]:
    return sorted(HERE.glob(f"static_s*/{kind}/*.py"))


def _source(path: Path) -> str:
    """The fixture's text; one starting ``# head: NAME`` is its folder's ``heads/NAME.py`` (imports, a kernel and
    its launcher, shared by many fixtures) followed by the rest."""
    text = path.read_text()
    first, _, rest = text.partition("\n")
    if first.startswith("# head: "):
        return (path.parent.parent / "heads" / f"{first.removeprefix('# head: ').strip()}.py").read_text() + rest
    return text


@pytest.mark.parametrize("path", _fixtures("honest"), ids=lambda p: f"{p.parent.parent.name}-{p.stem}")
def test_honest_library_pattern_passes_and_launches(path):
    report = check_source(_source(path), path.name)
    assert report.ok, report.violations
    assert report.launched, path.name


@pytest.mark.parametrize("path", _fixtures("redteam"), ids=lambda p: f"{p.parent.parent.name}-{p.stem}")
def test_walkaround_of_a_relaxation_is_refused_statically(path):
    report = check_source(_source(path), path.name)
    assert not report.ok, path.name
