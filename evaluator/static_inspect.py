"""inspect for names only: ``inspect.signature(f)`` read for parameter names, ``inspect.unwrap(f)`` as a key.

Kernel libraries read parameter names (a decorator mapping positional arguments to names, a probe of whether
``triton.autotune`` takes ``cache_results``) and key registries by a function's unwrapped original. The rest of what
these two calls return reaches further: a ``Parameter``'s default or annotation and a signature's return annotation
are objects the function holds (a harness keeping references in default arguments would hand them over), ``eval_str``
evaluates annotations as code, ``bind`` hands arguments back, and ``unwrap``'s result is a callable the checker never
sees by name. So every ``inspect.signature`` call takes one positional argument and nothing else, and its result is
read only through ``.parameters`` for names: ``"x" in sig.parameters``, ``sig.parameters.keys()`` or the mapping
itself handed to ``list``/``set``/``tuple``/``sorted``/``len`` or iterated; the result may be kept in a name bound
once (not in a class body, where it is read as ``C.sig``/``self.sig``, which no name lookup follows). Every
``inspect.unwrap`` call takes one positional argument and its result is only a subscript key (``registry[unwrap(f)]``)
or compared by identity. Any other use, and either function as a value, is reported. Pure function over the AST.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from evaluator.static_model import bound_names
from evaluator.static_uses import assigned_once, enclosing_scope, name_loads

SIGNATURE = "inspect.signature"
UNWRAP = "inspect.unwrap"
_NAME_READERS = frozenset({"list", "set", "frozenset", "tuple", "sorted", "len"})
_WHY_SIGNATURE = ("inspect.signature may only be read for parameter names (`\"x\" in inspect.signature(f).parameters`, "
                  "`list(sig.parameters.keys())`), with one positional argument: defaults, annotations and bind() "
                  "hand over objects a function holds, and eval_str runs annotations as code")
_WHY_UNWRAP = ("inspect.unwrap may only give a key (`registry[inspect.unwrap(f)]`) or be compared: the original it "
               "returns is a callable the checker cannot follow")

Report = Callable[[str, ast.AST, str], None]
Resolve = Callable[[ast.AST], "str | None"]


def check_inspect(tree: ast.Module, resolve: Resolve, parents: dict[int, ast.AST], report: Report) -> None:
    """Report every use of ``inspect.signature``/``inspect.unwrap`` beyond reading names or keying a table."""
    rebound = _bound_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and isinstance(parents.get(id(node)), ast.ClassDef) and (
                _imports_inspect(node)):
            report("banned-import", node, "inspect imported into a class body is read back as `C.name`/`self.name`, "
                   "which the checker cannot follow: import it at module level")
        if not isinstance(node, ast.Attribute | ast.Name) or not isinstance(node.ctx, ast.Load):
            continue
        dotted = resolve(node)
        if dotted not in (SIGNATURE, UNWRAP) or isinstance(parents.get(id(node)), ast.Attribute):
            continue
        call = parents.get(id(node))
        why = _WHY_SIGNATURE if dotted == SIGNATURE else _WHY_UNWRAP
        if not (isinstance(call, ast.Call) and call.func is node):
            report("banned-import", node, f"`{ast.unparse(node)}` handed on as a value: {why}")
        elif call.keywords or len(call.args) != 1 or not _plain_reference(call.args[0]):
            report("banned-import", call, f"`{ast.unparse(call)[:60]}` must take one positional argument, a name or "
                   f"a dotted name: {why}")
        elif dotted == UNWRAP and not _key_or_compared(call, parents, tree):
            report("banned-import", call, f"the result of `{ast.unparse(call)[:60]}` is used as a value: {why}")
        elif dotted == SIGNATURE and not _signature_read_for_names(call, parents, rebound):
            report("banned-import", call, f"the result of `{ast.unparse(call)[:60]}` is read beyond parameter "
                   f"names: {why}")


def _imports_inspect(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] == "inspect"
    return any(alias.name.split(".")[0] == "inspect" for alias in node.names)


def _plain_reference(node: ast.AST) -> bool:
    """A name or a dotted name (``fn``, ``triton.autotune``), never an object made on the spot, whose
    ``__signature__`` or ``__wrapped__`` the call would read."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _key_or_compared(call: ast.Call, parents: dict[int, ast.AST], tree: ast.Module) -> bool:
    """A key of a plain dict the module made and only subscripts (``TABLE: dict = {}``; another object's
    ``__getitem__`` would receive the original, and a dict's keys hand it out), or compared by identity."""
    parent = parents.get(id(call))
    if isinstance(parent, ast.Compare):
        return len(parent.ops) == 1 and isinstance(parent.ops[0], ast.Is | ast.IsNot)
    return (isinstance(parent, ast.Subscript) and parent.slice is call and isinstance(parent.value, ast.Name)
            and _module_dict(tree, parent.value.id, parents))


def _module_dict(tree: ast.Module, name: str, parents: dict[int, ast.AST]) -> bool:
    """``name`` is bound once, at module level, to an empty dict display or ``dict()``, and only subscripted."""
    values = [node.value for node in tree.body if isinstance(node, ast.Assign | ast.AnnAssign)
              for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
              if isinstance(target, ast.Name) and target.id == name]
    empty = len(values) == 1 and (
        (isinstance(values[0], ast.Dict) and not values[0].keys) or (
            isinstance(values[0], ast.Call) and isinstance(values[0].func, ast.Name) and values[0].func.id == "dict"
            and not values[0].args and not values[0].keywords))
    # read only by subscription: its keys (the originals) are never handed out by iteration, keys() or popitem()
    return empty and assigned_once(tree, name) and all(_subscripted(n, parents) for n in name_loads(tree, name))


def _subscripted(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    parent = parents.get(id(node))
    return isinstance(parent, ast.Subscript) and parent.value is node


def _signature_read_for_names(call: ast.Call, parents: dict[int, ast.AST], rebound: set[str]) -> bool:
    parent = parents.get(id(call))
    if isinstance(parent, ast.Attribute):
        return _parameters_for_names(parent, parents, rebound)
    if not (isinstance(parent, ast.Assign) and parent.value is call and len(parent.targets) == 1
            and isinstance(parent.targets[0], ast.Name)):
        return False
    name = parent.targets[0].id
    scope = enclosing_scope(parent, parents)
    if isinstance(parents.get(id(parent)), ast.ClassDef) or not assigned_once(scope, name):
        return False
    loads = name_loads(scope, name)
    return all(isinstance(parents.get(id(n)), ast.Attribute) and _parameters_for_names(parents[id(n)], parents,
                                                                                        rebound) for n in loads)


def _parameters_for_names(attr: ast.AST, parents: dict[int, ast.AST], rebound: set[str]) -> bool:
    """``<signature>.parameters`` used only for its keys."""
    if not (isinstance(attr, ast.Attribute) and attr.attr == "parameters"):
        return False
    parent = parents.get(id(attr))
    if isinstance(parent, ast.Attribute) and parent.attr == "keys":  # .parameters.keys()
        call = parents.get(id(parent))
        if not (isinstance(call, ast.Call) and call.func is parent and not call.args and not call.keywords):
            return False
        return _names_consumed(call, parents, rebound)
    return _names_consumed(attr, parents, rebound)


def _names_consumed(node: ast.AST, parents: dict[int, ast.AST], rebound: set[str]) -> bool:
    """Iterating ``node`` gives parameter names, and that is all that happens to it here."""
    parent = parents.get(id(node))
    if isinstance(parent, ast.Compare):  # "x" in sig.parameters; no chain, which makes it the next test's operand
        return parent.comparators == [node] and isinstance(parent.ops[0], ast.In | ast.NotIn)
    if isinstance(parent, ast.Call) and parent.args == [node] and not parent.keywords:
        return isinstance(parent.func, ast.Name) and parent.func.id in _NAME_READERS and parent.func.id not in rebound
    if isinstance(parent, ast.For | ast.comprehension) and parent.iter is node:
        return True
    return False


def _bound_names(tree: ast.Module) -> set[str]:
    """Every name the module binds in any of its scopes (a candidate's own ``list`` is not the builtin)."""
    scopes = (node for node in ast.walk(tree) if isinstance(node, _SCOPES))
    return set().union(*(bound_names(scope) for scope in scopes))


_SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp)
