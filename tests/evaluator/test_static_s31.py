"""Session 31's false-reject hunt and the red team that attacked its fixes, as static checks.

``static_s31/honest/``: honest patterns of kernel libraries the checker used to refuse (a submodule named like a
tensor method, ``torch.finfo(...).min``, ``abc.ABC``, a custom-op namespace of one's own starting with "torch", a final
mean over a launcher's per-row losses, a reference method nothing names, template methods, stored bound methods,
kernel tables, a registry class decorator): each passes and launches a kernel.

``static_s31/redteam/``: walk-arounds of those relaxations (a parameter named ``self``, a class attribute or
``add_module`` shadowing the submodule, a match capture rebinding a finfo name, torch's lazily registered ``onnx``
namespace, a fallback ``def`` for an import that fails only under the verifier, methods Python calls unnamed through
``**obj``/``print(file=)``/``closing``, a launch table rebound or shadowed, a registered class patched through its
table): each is refused by the static checker itself, not left to the run time. (Full reductions of an own function's
result, ``r5`` in the red team, pass the static layer on purpose: the run time refuses torch ops on large tensors.)
"""

from pathlib import Path

import pytest

from evaluator.static_check import check_source

HERE = Path(__file__).resolve().parent / "static_s31"  # static-only fixtures, not suite candidates (no task run)


@pytest.mark.parametrize("path", sorted((HERE / "honest").glob("*.py")), ids=lambda p: p.stem)
def test_honest_library_pattern_passes_and_launches(path):
    report = check_source(path.read_text(), path.name)
    assert report.ok, report.violations
    assert report.launched, path.name


@pytest.mark.parametrize("path", sorted((HERE / "redteam").glob("*.py")), ids=lambda p: p.stem)
def test_walkaround_of_a_relaxation_is_refused_statically(path):
    report = check_source(path.read_text(), path.name)
    assert not report.ok, path.name
