"""Optional dependencies: imports that are allowed to fail, and ``importlib.import_module`` version probes.

Kernel libraries probe for packages they can use but do not need: ``try: import peft`` / ``except ImportError:
PEFT_AVAILABLE = False``, or ``pkg = importlib.import_module(package); Version(pkg.__version__) >= ...`` (Liger's
``compare_version("triton", operator.ge, "3.0.0")``). In the candidate process an import of a module outside the
allowlist raises ``ModuleNotFoundError`` -- but only when the module is not loaded yet (an import of a loaded
module raises no audit event), and ``importlib.import_module`` raises none at all. So the checker accepts such an
import only where no run-time outcome can hand the candidate the module:

* an import inside a ``try`` whose handler catches ImportError (or Exception) and only binds fallbacks, when the
  module's package is not one the run time lets candidates import, and the names it binds are never read
  anywhere and are not class attributes (a presence probe: the run time refuses the import, or the module is
  loaded already and importing it does nothing, and either way nothing can reach it through the names); or when
  the import always fails -- the module is not installed here, or it is a third-party package the run time never
  lets a candidate import (its import wrappers refuse it even when it is loaded; standard-library modules are
  not assumed refused, so that this layer still holds where those wrappers were defeated) -- so the rest of the
  ``try`` body never runs and the fallback always does (Liger's ``try: from transformers.utils import ...``);
* ``importlib.import_module(name)`` whose result is read, and only for ``__version__``, where ``name`` is a string
  literal, or a parameter of a module-level function that is only ever called directly with string literals,
  and every such literal is a module the allowlist allows or one that is not installed;
* ``importlib.import_module(f"pkg.{name}...")`` (or a literal) whose top-level package is spelled out and is
  refused everywhere (as above) and not loaded in this process: the package must be imported before any of its
  submodules, and the run time refuses it, so the call can only raise (fla's
  ``import_module(f"fla.ops.{operation}.backends")``). What the rest of the name computes cannot matter; a
  computed or relative package, one the run time allows, one already loaded (``evaluator``, the harness itself;
  ``numpy``, which torch loads: ``import_module`` hands back a loaded module, so only the run-time wrapper would
  stand in the way), or a private name (``__main__``, ``_distutils_hack``) is still refused.

"Installed" is asked of the Python installation the candidate process shares (``importlib.util.find_spec`` of the
top-level name, which imports nothing).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import sys
from collections.abc import Callable

from evaluator.import_policy import RUNTIME_IMPORT_ROOTS
from evaluator.static_model import ModuleModel, constant_str, resolve
from evaluator.static_rules import module_allowed
from evaluator.static_uses import assigned_once

IMPORT_MODULE = "importlib.import_module"
_HARNESS = __name__.split(".")[0]  # `evaluator`: loaded in every candidate process, never to be assumed refused
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)

Parents = dict[int, ast.AST]


@functools.lru_cache(maxsize=256)
def installed(module: str) -> bool:
    """True when the top-level package of ``module`` can be found (standard library included)."""
    root = module.split(".")[0]  # "pytorch-triton-xpu" (a distribution's name) is searched like any other
    if root in sys.stdlib_module_names or root in sys.modules:
        return True
    try:
        return importlib.util.find_spec(root) is not None
    except (ImportError, ValueError):
        return True  # cannot tell: treat as installed (the strict answer)


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(t, ast.Name) and t.id in _IMPORT_ERRORS for t in types)


def guarding_try(node: ast.AST, parents: Parents) -> ast.Try | None:
    """The ``try`` whose body holds ``node`` in the same scope (an import inside a nested def is not guarded)."""
    child, parent = node, parents.get(id(node))
    while parent is not None and not isinstance(parent, (*_SCOPES, ast.Module)):
        if isinstance(parent, ast.Try | getattr(ast, "TryStar", ast.Try)) and child in parent.body:
            return parent
        child, parent = parent, parents.get(id(parent))
    return None


def _binds_fallbacks_only(body: list[ast.stmt]) -> bool:
    """A handler that binds constants, placeholders or values computed before (names), or gives up."""
    for stmt in body:
        if isinstance(stmt, ast.Pass | ast.Raise | ast.Import | ast.ImportFrom):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        if isinstance(stmt, ast.ClassDef) and all(isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(
                s.value, ast.Constant)) for s in stmt.body) and not stmt.bases and not stmt.decorator_list:  # fmt: skip
            continue
        value = stmt.value if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.Return) else None
        if value is None and isinstance(stmt, ast.Return):
            continue
        if value is not None and _inert_value(value):
            continue
        return False
    return True


def _inert_value(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant | ast.Name):
        return True
    if isinstance(node, ast.Tuple | ast.List):
        return all(_inert_value(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
        return _inert_value(node.operand)
    return False


def imported_module(node: ast.Import | ast.ImportFrom, alias: ast.alias) -> str:
    return alias.name if isinstance(node, ast.Import) else f"{node.module}"


def bound_name(node: ast.Import | ast.ImportFrom, alias: ast.alias) -> str:
    if isinstance(node, ast.Import):
        return alias.asname or alias.name.split(".")[0]
    return alias.asname or alias.name


def refused_everywhere(module: str) -> bool:
    """An import of ``module`` from the candidate's file raises ImportError wherever the candidate runs: it is
    outside the allowlist and either not installed, or a third-party package the run time never lets candidates
    import (the candidate process's import wrappers refuse it whether or not it is loaded already), so the answer
    does not depend on which packages the machine happens to have."""
    if module_allowed(module):
        return False
    root = module.split(".")[0]
    if root == _HARNESS or root.startswith("_"):
        return False  # the verifier's own package and private/dunder roots (__main__ is the harness's script)
    if not installed(module):
        return True
    # The standard library stays under the stricter rule below (its gc, ctypes, inspect are the tools that
    # would defeat the in-process guards, and this layer must hold if those guards are defeated).
    return root not in RUNTIME_IMPORT_ROOTS and root not in sys.stdlib_module_names


def always_fails(node: ast.AST) -> bool:
    """An import statement that raises ImportError wherever the candidate runs (:func:`refused_everywhere`)."""
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        return not node.level and bool(module) and refused_everywhere(module)
    if isinstance(node, ast.Import):  # names are imported left to right: only a refused first one stops them all
        return bool(node.names) and refused_everywhere(node.names[0].name)
    return False


def optional_import(node: ast.Import | ast.ImportFrom, parents: Parents, loaded: Callable[[str], bool]) -> bool:
    """True when a refused import may stand because it is optional and can never hand the module over (module
    docstring). ``loaded(name)`` says whether the file reads ``name`` anywhere."""
    guard = guarding_try(node, parents)
    if guard is None or guard.finalbody or not guard.handlers:
        return False
    if not any(_catches_import_error(h) for h in guard.handlers):
        return False
    if not all(_binds_fallbacks_only(h.body) for h in guard.handlers):
        return False  # a fallback def would be what the verifier judges, the library's function what a user runs
    if always_fails(node):
        return True
    if isinstance(_scope_of(node, parents), ast.Lambda) or _in_class_body(node, parents):
        return False  # a class attribute (``Holder.ctypes``) is read without naming it
    if any(imported_module(node, a).split(".")[0] in RUNTIME_IMPORT_ROOTS for a in node.names):
        return False  # the run time lets it import (torch._dynamo...): its import side effects would happen
    return not any(alias.name == "*" or loaded(bound_name(node, alias)) for alias in node.names)


def _in_class_body(node: ast.AST, parents: Parents) -> bool:
    parent = parents.get(id(node))
    while parent is not None and not isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Module):
        if isinstance(parent, ast.ClassDef):
            return True
        parent = parents.get(id(parent))
    return False


# -- importlib.import_module(name) as a version probe ------------------------------------------------------------

def _scope_of(node: ast.AST, parents: Parents) -> ast.AST | None:
    parent = parents.get(id(node))
    while parent is not None and not isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        if isinstance(parent, ast.Module):
            return parent
        parent = parents.get(id(parent))
    return parent


def _version_reads_only(call: ast.Call, parents: Parents) -> bool:
    """The module ``call`` returns is only read for ``__version__`` (directly, or through one local name)."""
    parent = parents.get(id(call))
    if isinstance(parent, ast.Attribute) and parent.value is call:
        return parent.attr == "__version__"
    if not (isinstance(parent, ast.Assign) and parent.value is call and len(parent.targets) == 1
            and isinstance(parent.targets[0], ast.Name)):  # fmt: skip
        return False
    name = parent.targets[0].id
    scope = _scope_of(call, parents)
    if scope is None:
        return False
    stores, reads, reads_ok = 0, 0, True
    for n in ast.walk(scope):
        if isinstance(n, ast.Name) and n.id == name:
            if not isinstance(n.ctx, ast.Load):
                stores += 1
                continue
            up = parents.get(id(n))
            reads += 1
            reads_ok &= isinstance(up, ast.Attribute) and up.attr == "__version__" and isinstance(up.ctx, ast.Load)
        elif isinstance(n, ast.Global | ast.Nonlocal) and name in n.names:
            return False
    return stores == 1 and reads > 0 and reads_ok


def _parameter_literals(model: ModuleModel, tree: ast.Module, parents: Parents, scope: ast.AST,
                        param: str) -> list[str] | None:  # fmt: skip
    """The string literals every caller passes for ``param`` of the module-level function ``scope``; None when a
    caller passes anything else, the function is used other than by direct calls, or ``param`` is rebound."""
    if not isinstance(scope, ast.FunctionDef) or model.functions.get(scope.name) is not scope:
        return None
    params = [a.arg for a in [*scope.args.posonlyargs, *scope.args.args]]
    kwonly = [a.arg for a in scope.args.kwonlyargs]
    if param not in params and param not in kwonly:
        return None
    if any(isinstance(n, ast.Name) and n.id == param and not isinstance(n.ctx, ast.Load) for n in ast.walk(scope)):
        return None
    if scope.decorator_list:
        return None  # a decorator may call it with anything
    values: list[str] = []
    for n in ast.walk(tree):
        if not (isinstance(n, ast.Name) and n.id == scope.name and isinstance(n.ctx, ast.Load)):
            continue
        call = parents.get(id(n))
        if not (isinstance(call, ast.Call) and call.func is n):
            return None  # handed on as a value: called with arguments the checker cannot see
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return None
        given = [k.value for k in call.keywords if k.arg == param]
        if param in params and params.index(param) < len(call.args):
            given.append(call.args[params.index(param)])
        literal = constant_str(given[0]) if len(given) == 1 else None
        if literal is None:
            return None
        values.append(literal)
    return values


def version_probe(call: ast.Call, model: ModuleModel, tree: ast.Module, parents: Parents) -> bool:
    """True for ``importlib.import_module(name)`` used only as a version probe (module docstring)."""
    if resolve(call.func, model.aliases) != IMPORT_MODULE or call.keywords or len(call.args) != 1:
        return False
    if not _version_reads_only(call, parents):
        return False
    arg = call.args[0]
    names: list[str] | None
    literal = constant_str(arg)
    if literal is not None:
        names = [literal]
    elif isinstance(arg, ast.Name):
        scope = _scope_of(call, parents)
        names = _parameter_literals(model, tree, parents, scope, arg.id) if scope is not None else None
    else:
        names = None
    return names is not None and all(module_allowed(n) or not installed(n) for n in names)


def failing_import_module(call: ast.AST | None, model: ModuleModel) -> bool:
    """``importlib.import_module(<name>)`` whose spelled-out top-level package is refused everywhere, so it can
    only raise ImportError wherever the candidate runs (module docstring); the name a literal, an f-string, or a
    local bound once to one of those."""
    if not isinstance(call, ast.Call) or resolve(call.func, model.aliases) != IMPORT_MODULE:
        return False
    if call.keywords or len(call.args) != 1:
        return False
    arg: ast.expr | None = call.args[0]
    if isinstance(arg, ast.Name):  # module_path = f"pkg.{op}.backends"; import_module(module_path)
        arg = _single_binding(arg, model.parents)
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        prefix, whole = arg.value, True
    elif isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        prefix, whole = str(arg.values[0].value), False
    else:
        return False
    if not whole and "." not in prefix:
        return False  # f"fl{x}": the package itself is computed
    root = prefix.split(".")[0]
    return bool(root) and root.isidentifier() and not root.startswith("_") and root not in sys.modules \
        and refused_everywhere(root)


def _single_binding(name: ast.Name, parents: Parents) -> ast.expr | None:
    """The value of ``name`` when its function binds it exactly once, by a plain ``name = value``, else None."""
    scope = _scope_of(name, parents)
    if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) or not assigned_once(scope, name.id):
        return None
    if any(isinstance(n, ast.Global | ast.Nonlocal) and name.id in n.names for n in ast.walk(scope)):
        return None
    for n in ast.walk(scope):
        if isinstance(n, ast.Name) and n.id == name.id and isinstance(n.ctx, ast.Store):
            parent = parents.get(id(n))
            if isinstance(parent, ast.Assign) and parent.targets == [n]:
                return parent.value
    return None


MODULES_GET = "sys.modules.get"


def absent_module_lookup(call: ast.AST | None, model: ModuleModel) -> bool:
    """``sys.modules.get("pkg.mod"[, <constant>])`` of a literal whose top-level package is refused everywhere and
    not loaded: the run time refuses the package's import and nothing of the verifier imports it, so the lookup
    always answers the default -- it can hand over no module (fla's ``tensor_cache`` asks
    ``sys.modules.get('fla.utils')`` for a flag it reads with a default). A computed name, an allowed, loaded or
    private package (``evaluator``, ``numpy``, ``__main__``), a default that is not a constant, or ``sys.modules``
    used any other way stays refused."""
    if not isinstance(call, ast.Call) or resolve(call.func, model.aliases) != MODULES_GET or call.keywords:
        return False
    if not 1 <= len(call.args) <= 2 or not all(isinstance(a, ast.Constant) for a in call.args):
        return False
    name = call.args[0].value if isinstance(call.args[0], ast.Constant) else None
    if not isinstance(name, str) or not all(part.isidentifier() for part in name.split(".")):
        return False
    root = name.split(".")[0]
    return not root.startswith("_") and root not in sys.modules and name not in sys.modules \
        and refused_everywhere(root)
