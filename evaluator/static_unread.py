"""Unread module-level tables: a name the module binds once to references and that no running code ever reads.

fla's activation module ends with ``ACT2FN = {'relu': F.relu, 'gelu': fast_gelu_impl, ...}`` (and binds
``sigmoidglu_linear = SigmoidGLULinearFunction.apply``) for the library's layers to look activations up by name; a
kernel pasted from the module reads neither. A reference kept in a table can run from anywhere the table goes, which
is why a stored reference is refused and makes what it names reachable. But a table nothing reads goes nowhere: its
references are never called, and the functions and autograd Functions named only there never run. Refusing it would
refuse the library; accepting every table would accept ``ACT = F.relu`` read back on the forward path. The rule
learns the difference from where the name is read.

A module-level ``NAME = value`` is unread when:

* it stands directly in the module body (not under ``if``/``try``), with one plain-name target, and ``NAME`` is bound
  nowhere else in the file (no second assignment, augmented assignment, ``del``, ``global``, parameter, loop or
  ``with``/``except``/walrus/match target, import, ``def`` or ``class`` of that name), is no dunder and is not the
  entry point: every read of the name anywhere is a read of this binding;
* evaluating ``value`` calls nothing and hashes nothing of the candidate's: it is a constant, a plain name, an
  attribute of an imported module (``F.relu``: the last module-level statement before the table that binds ``F`` is
  a plain import of the standard library, torch or triton, no star import comes between, no ``global`` rebinds it), an
  autograd Function's inherited ``Cls.apply`` (the class binds no ``apply``, has no decorator or keyword, derives from
  ``torch.autograd.Function`` alone), or a tuple, list or dict display of those (dict keys constants, no ``*``/``**``);
* ``NAME`` is named in no string of the file (docstrings and the tables' own constant keys aside): a string may be a
  name looked up (``getattr(module, "NAME")``, ``__all__``, a string annotation, a Triton ``do_not_specialize``
  list), and the file names none of the builtins and attributes that read a namespace (``globals``, ``vars``,
  ``locals``, ``dir``, ``eval``, ``exec``, ``compile``, ``__import__``, ``__dict__``, ``__globals__``, ``f_globals``,
  ``gi_frame``...; each is refused on its own too, but for a generator's ``gi_frame.f_globals``, as are
  ``sys.modules``, ``inspect``'s frames and ``gc``; and the harness reads only the entry point of the candidate's
  module, which it imports under a private name: a candidate importing itself is refused);
* and no code that runs reads ``NAME`` (evaluator.static_liveness): the module's top-level code (other statements,
  class bodies, decorators, default values, annotations, Triton kernel bodies), the entry point and every function
  those reach. A read in a function nothing running refers to, or in the value of another unread binding, is no read
  (transitively: ``fast_gelu_impl = FastGeLUFunction.apply`` read only by an unread ``ACT2FN`` is unread itself).

What an unread value names is no reference (the forward path and liveness do not follow it), and the
``torch-compute`` finding "keeps a reference to PyTorch op" is not raised in it; every other rule applies to it
(a private API or a refused module's member named there stays refused).
"""

from __future__ import annotations

import ast

from evaluator.static_dormant import quiet_module
from evaluator.static_model import ModuleModel, resolve
from evaluator.static_uses import binding_counts

AUTOGRAD_FUNCTION = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})
# Builtins and attributes that read a namespace by name (all refused by other rules): a file naming one keeps every
# binding read.
_NAMESPACE_READERS = frozenset({"globals", "vars", "locals", "dir", "eval", "exec", "compile", "__import__",
                                "breakpoint", "help"})
# Attributes that hand out a frame or a module's namespace without being dunders (a generator's
# ``gi_frame.f_globals``, a Triton kernel's ``get_capture_scope()`` and ``used_global_vals``): refused everywhere
# (evaluator.static_visitor), and a file naming one keeps every binding read.
NAMESPACE_HANDLES = frozenset({"f_globals", "f_locals", "f_builtins", "f_back", "tb_frame", "gi_frame", "cr_frame",
                               "ag_frame", "gi_yieldfrom", "get_capture_scope", "used_global_vals"})
_NAMESPACE_ATTRS = NAMESPACE_HANDLES | {"__dict__", "__globals__", "__builtins__", "__getattribute__", "__closure__",
                                        "__code__"}


def _string_words(tree: ast.Module, keys: set[int]) -> set[str]:
    """Every identifier-like word of a string constant that is not a docstring (a bare string statement) or one of
    ``keys`` (ids of the constant keys of the tables themselves: a key is a name only where code uses it as one, and a
    computed name is refused wherever a name is looked up)."""
    docstrings = {id(s.value) for s in ast.walk(tree) if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)}
    words: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes) and id(node) not in docstrings | keys:
            text = node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
            words.update("".join(c if c.isalnum() or c == "_" else " " for c in text).split())
    return words


def _reads_namespaces(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in _NAMESPACE_READERS:
            return True
        if isinstance(node, ast.Attribute) and node.attr in _NAMESPACE_ATTRS:
            return True
    return False


def _plain_autograd_function(model: ModuleModel, name: str) -> bool:
    """``name`` is a module-level ``class X(torch.autograd.Function)`` with no decorator, keyword or other base, whose
    body binds no ``apply``: ``X.apply`` is torch's classmethod, and reading it runs nothing of the candidate's."""
    node = model.classes.get(name)
    if not isinstance(node, ast.ClassDef) or name not in model.autograd_functions:
        return False
    if node.decorator_list or node.keywords or not node.bases:
        return False
    if not all(resolve(b, model.aliases) in AUTOGRAD_FUNCTION for b in node.bases):
        return False
    for item in node.body:
        for sub in ast.walk(item):
            if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and sub.name == "apply":
                return False
            if isinstance(sub, ast.Name) and sub.id == "apply" and not isinstance(sub.ctx, ast.Load):
                return False
            if isinstance(sub, ast.alias) and (sub.asname or sub.name) == "apply":
                return False
    return True


def _statement_bindings(tree: ast.Module) -> list[set[str]]:
    """Per module-level statement, the names it binds somewhere in it, in any scope and any way (``"*"`` for a star
    import, which may bind any name)."""
    out = []
    for stmt in tree.body:
        names = set(binding_counts(ast.Module(body=[stmt], type_ignores=[])))
        if any(isinstance(a, ast.alias) and a.name == "*" for a in ast.walk(stmt)):
            names.add("*")
        out.append(names)
    return out


def _imported_module(stmt: ast.stmt, name: str) -> str | None:
    """The module a plain ``import m as name`` / ``from p import m as name`` / ``import name`` statement binds."""
    if isinstance(stmt, ast.Import):
        for a in stmt.names:
            if a.asname == name:
                return a.name
            if a.asname is None and a.name.split(".")[0] == name:
                return name
    elif isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
        for a in stmt.names:
            if (a.asname or a.name) == name and a.name != "*":
                return f"{stmt.module}.{a.name}"
    return None


def _module_attribute(node: ast.Attribute, tree: ast.Module, before: int, binders: list[set[str]],
                      globals_: set[str]) -> bool:  # fmt: skip
    """``mod.attr`` (``F.relu``) read by the module-level statement ``tree.body[before]``: the last statement before
    it that binds ``mod`` is a plain import of the standard library, torch or triton (the name is the module when the
    table is made; no function rebinds it with ``global``, no star import may have). Reading a library object's
    attribute runs none of the candidate's code (a module ``__getattr__`` or a descriptor of its own would be a dunder
    it may not define)."""
    base = node.value
    while isinstance(base, ast.Attribute):
        base = base.value
    if not isinstance(base, ast.Name) or base.id in globals_:
        return False
    for index in range(before - 1, -1, -1):
        if "*" in binders[index]:
            return False
        if base.id in binders[index]:
            module = _imported_module(tree.body[index], base.id)
            return module is not None and quiet_module(module)
    return False


def inert_value(node: ast.AST, model: ModuleModel, counts: dict[str, int], tree: ast.Module, before: int,
                binders: list[set[str]], globals_: set[str]) -> bool:  # fmt: skip
    """Evaluating ``node``, in the module-level statement ``tree.body[before]``, calls and hashes nothing of the
    candidate's (module docstring); ``counts``: every binding of each name; ``binders``: the names each module-level
    statement binds; ``globals_``: names some ``global`` or ``nonlocal`` statement declares."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return isinstance(node.ctx, ast.Load)
    if isinstance(node, ast.Attribute):
        if isinstance(node.value, ast.Name) and node.attr == "apply" and counts.get(node.value.id, 0) == 1 \
                and _plain_autograd_function(model, node.value.id):  # fmt: skip
            return True
        return _module_attribute(node, tree, before, binders, globals_)
    if isinstance(node, ast.Tuple | ast.List):
        return all(not isinstance(e, ast.Starred) and inert_value(e, model, counts, tree, before, binders, globals_)
                   for e in node.elts)  # fmt: skip
    if isinstance(node, ast.Dict):
        return all(isinstance(k, ast.Constant) for k in node.keys) and all(
            inert_value(v, model, counts, tree, before, binders, globals_) for v in node.values)
    return False


def deferred_bindings(tree: ast.Module, model: ModuleModel, entry: str) -> dict[str, ast.Assign]:
    """Name -> its module-level binding, for every binding that is unread unless running code reads the name (all
    but the last condition of the module docstring; liveness decides that one)."""
    if _reads_namespaces(tree):
        return {}
    counts = binding_counts(tree)
    globals_ = {name for n in ast.walk(tree) if isinstance(n, ast.Global | ast.Nonlocal) for name in n.names}
    binders = _statement_bindings(tree)
    shaped: dict[str, ast.Assign] = {}
    for index, stmt in enumerate(tree.body):
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            continue
        name = stmt.targets[0].id
        if name == entry or (name.startswith("__") and name.endswith("__")) or counts.get(name, 0) != 1:
            continue
        if inert_value(stmt.value, model, counts, tree, index, binders, globals_):
            shaped[name] = stmt
    keys = {id(k) for stmt in shaped.values() if isinstance(stmt.value, ast.Dict) for k in stmt.value.keys if k}
    words = _string_words(tree, keys)
    return {name: stmt for name, stmt in shaped.items() if name not in words}
