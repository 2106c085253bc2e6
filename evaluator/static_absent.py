"""Feature tests that are false wherever the candidate runs: ``hasattr(<torch/triton module>, "name")`` of a name the
installed module does not have.

Libraries adapt to forks of Triton and torch by testing for what those forks add, and patch the stock module when
they find it. fla aliases Ascend's extra library for torch_npu's inductor::

    if not hasattr(tl.extra, 'ascend') and hasattr(tl.extra, 'cann'):
        tl.extra.ascend = sys.modules['triton.language.extra.ascend'] = tl.extra.cann

The branch would patch Triton and write ``sys.modules``, both refused anywhere they can run; but it runs only on an
installation that ships ``triton.language.extra.cann``. The checker shares the Python installation of the candidate
process (as ``evaluator.static_optional`` does for optional imports), so it can ask the module itself: when the
installed module (a plain ``types.ModuleType``, not a subclass whose class may answer for it, as
``torch.backends.cudnn``'s does) has no attribute ``name``, no submodule of that name can be found (an import would
add it; any error finding one answers "not absent"), and the module defines no ``__getattr__`` (PEP 562: attributes
made on demand), the test is false in the candidate process too -- the candidate cannot add the attribute first,
since assigning an attribute of an imported module is refused where it runs (patching) and so are file writes that
would install a package. The body of an ``if`` whose test
needs that ``hasattr`` to be true (the test itself or a conjunct of an ``and``) is then code that never runs
(``evaluator.static_liveness.Branches``; the rules lifted there are the visitor's ``ABSENT_BRANCH_EXEMPT``).

Only public torch and triton modules the checker's process has loaded are asked (after importing ``torch`` and
``triton.language`` itself; it imports nothing on a candidate's say); the name must be a string literal and
``hasattr`` the builtin (bound nowhere in the file). What is installed where the verifier runs decides the verdict,
as for optional imports (docs/verifier.md, Known limits): on an Ascend installation the branch is live and refused.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import sys
from collections.abc import Callable
from types import ModuleType

# The packages asked, and what the checker imports of each before asking (so a verdict never depends on what was
# imported first).
_ASKED = {"torch": "torch", "triton": "triton.language"}


@functools.lru_cache(maxsize=128)
def module_lacks(module: str, name: str) -> bool:
    """The installed ``module`` (a public torch/triton module the checker's process has loaded already: the candidate's
    text never makes the verifier import anything) has no attribute ``name``, makes none on demand and has no
    submodule so named. False whenever it cannot tell."""
    if module.split(".")[0] not in _ASKED or name.startswith("__") or any(p.startswith("_") for p in module.split(".")):
        return False
    importlib.import_module(_ASKED[module.split(".")[0]])  # fixed names, which the checker imports anyway
    loaded = sys.modules.get(module)  # never imported on the candidate's say: the checker runs in the verifier
    if type(loaded) is not ModuleType:
        return False  # a ModuleType subclass (torch.backends.cudnn's PropModule) answers from its class
    namespace = vars(loaded)
    if name in namespace or "__getattr__" in namespace:
        return False
    try:
        return importlib.util.find_spec(f"{module}.{name}") is None
    except Exception:  # noqa: BLE001 - any failure (torch.classes raises TypeError): not known absent
        return False


def single_import_names(tree: ast.Module, counts: dict[str, int]) -> frozenset[str]:
    """Names whose every binding in the file (any scope, any way: ``counts`` from static_uses.binding_counts) is
    an import of one and the same module. Only for those is the module an owner expression resolves to the one it
    stands for where the test runs: a second import in a function (``global E``) or a class body, or any other
    binding, may rebind it to a module that has the attribute."""
    imported: dict[str, set[str]] = {}
    seen: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                bound = (alias.asname or alias.name).split(".")[0]
                if isinstance(node, ast.ImportFrom):
                    target = f"{'.' * node.level}{node.module or ''}.{alias.name}"
                else:
                    target = alias.name if alias.asname else bound
                imported.setdefault(bound, set()).add(target)
                seen[bound] = seen.get(bound, 0) + 1
    return frozenset(name for name, targets in imported.items()
                     if len(targets) == 1 and counts.get(name, 0) == seen[name])


def owner_root(node: ast.AST) -> str | None:
    """The name an attribute chain starts from (``tl`` of ``tl.extra``)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def absent_attribute(test: ast.AST, resolve: Callable[[ast.AST], str | None], hasattr_builtin: bool) -> bool:
    """``test`` is ``hasattr(<torch/triton module>, "name")`` and false wherever the candidate runs (module docstring);
    ``hasattr_builtin`` says the file binds no other ``hasattr``."""
    if not (hasattr_builtin and isinstance(test, ast.Call) and isinstance(test.func, ast.Name)
            and test.func.id == "hasattr" and len(test.args) == 2 and not test.keywords):  # fmt: skip
        return False
    owner, name = test.args
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return False
    dotted = resolve(owner)
    return dotted is not None and module_lacks(dotted, name.value)


def needs_absent(test: ast.AST, resolve: Callable[[ast.AST], str | None], hasattr_builtin: bool) -> bool:
    """``test`` is such a ``hasattr`` or an ``and`` with one among its operands: its body runs nowhere this
    installation runs (the visitor also lifts the module-attribute patching rule there)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(needs_absent(v, resolve, hasattr_builtin) for v in test.values)
    return absent_attribute(test, resolve, hasattr_builtin)
