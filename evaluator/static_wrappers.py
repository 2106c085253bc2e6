"""Decorators that hand the function they wrap exactly the arguments its wrapper was called with.

The always-None inference (``evaluator.static_liveness.parameter_facts``) maps every call of a function onto its
parameters. A decorator stands between the two and could change what arrives, so a decorated function is assumed
only when each of its decorators is *transparent*: when the wrapped function is called, it is called from a
wrapper ``def wrapper(p1, ..., *args, **kwargs)`` as ``fn(p1, ..., *args, **kwargs)``, each argument either the one
the wrapper received or that argument made contiguous when it is a tensor (so None stays None and a literal stays
that literal), and the decorator keeps the function nowhere else it could be called from. Kernel libraries wrap
every autograd forward so: Liger's ``ensure_contiguous`` (a comprehension over ``args``), fla's ``input_guard`` (a
loop appending ``_contiguous_if_needed(arg, ...)``, the bare form of a decorator that may also take keywords) and
fla's backend ``dispatch`` (a registry object whose method returns the wrapper; the function is kept only as a key
of a module table no code iterates).

What a use of the wrapped function may be, in the decorator and in every function it is handed to by name:
``functools.wraps(fn)``, ``inspect.signature(fn)``, ``fn.__name__``-style reads, ``fn is None``, ``isinstance(fn,
...)``, ``return fn``, a forwarding call from a wrapper as above, ``return g(fn)`` for a function ``g`` of the file
that is transparent in turn, ``return obj.m(fn)`` for an object made from a class of the file, and
``T[inspect.unwrap(fn)] = value`` for a module-level table only ever subscripted. Code under ``if isinstance(fn,
str)`` (a number, bytes) never runs for a function. A wrapper may be used only as ``return wrapper`` or ``return
torch.compiler.disable(wrapper)`` and decorated only by ``functools.wraps``. Library decorators that call the
function with the arguments they get: ``staticmethod``, ``functools.cache``/``lru_cache``,
``torch.compiler.disable``. Pure functions over the AST.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass

from evaluator.static_model import ModuleModel, resolve
from evaluator.static_probes import is_constant
from evaluator.static_uses import binding_sites

LIBRARY = frozenset({"staticmethod", "functools.cache", "functools.lru_cache", "torch.compiler.disable"})
_WRAPS = "functools.wraps"
_READS = frozenset({"__name__", "__qualname__", "__module__", "__doc__"})
_NOT_FUNCTIONS = frozenset({"str", "int", "float", "bytes", "bool"})
_MAPPING_READS = frozenset({"items", "values", "keys", "get"})
_FUNCTION = (ast.FunctionDef, ast.AsyncFunctionDef)
Def = ast.FunctionDef | ast.AsyncFunctionDef


def transparent(decorator: ast.expr, model: ModuleModel) -> bool:
    """``@decorator`` (a node of the module's tree, in a def's decorator list) hands the function it wraps only the
    arguments its wrapper gets (module docstring)."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = resolve(target, model.aliases) or (target.id if isinstance(target, ast.Name) else "")
    if name in LIBRARY and _unshadowed(target, model):
        return not isinstance(decorator, ast.Call) or all(is_constant(a) for a in _arguments(decorator))
    proof = _proof_for(decorator, model)
    return proof is not None


def registers_class(decorator: ast.expr, model: ModuleModel) -> bool:
    """``@decorator`` on a class returns the class itself and keeps it only as a value of a module-level table (a
    plain ``@register("name")`` or ``@register``): the function that receives the class has it as its one parameter,
    never rebinds it, returns it from every ``return`` (and has one), and otherwise only stores it as ``TABLE[key] =
    cls`` in a module-level name or reads its ``__name__``. The decorator is a module function bound once: the
    receiving function itself, or a factory called with constants whose every ``return`` names the one def of its
    body."""
    decorated = model.parents.get(id(decorator))
    if not isinstance(decorated, ast.ClassDef) or not any(d is decorator for d in decorated.decorator_list):
        return False
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Attribute) and isinstance(decorator, ast.Call):  # @CustomOp.register("silu_and_mul")
        found = _class_factory(target, model)
        if found is None or not all(is_constant(a) for a in _arguments(decorator)):
            return False
        owner, factory = found
        receiver = _made_by(factory, model)
        return receiver is not None and _keeps_class_only(receiver, model, _Registry(owner, factory))
    if not (isinstance(target, ast.Name) and _module_bound_once(target.id, model) and _unshadowed(target, model)):
        return False
    function = model.functions.get(target.id)
    receiver = function if isinstance(function, _FUNCTION) else None
    if isinstance(decorator, ast.Call) and receiver is not None:
        receiver = _made_by(receiver, model) if all(is_constant(a) for a in _arguments(decorator)) else None
    return receiver is not None and _keeps_class_only(receiver, model)


@dataclass(frozen=True)
class _Registry:
    """A class of the file whose classmethod ``factory`` makes a class decorator (vLLM's ``CustomOp.register``)."""

    owner: ast.ClassDef
    factory: Def

    def table(self, node: ast.AST, receiver: Def, model: ModuleModel) -> bool:
        """``cls.op_registry`` in ``receiver``: an attribute of the factory's ``cls`` (rebound neither there nor in
        ``receiver``) bound once in the owner's class body to an empty dict, never stored, and read only by the
        factory to file a class or test a key (what it files is never taken out and patched, called or handed on: red
        team s32)."""
        params, tree = _arg_nodes(self.factory), _tree(model)
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and params and tree is not None
                and node.value.id == params[0].arg and _own_bindings(self.factory, params[0].arg) == params[:1]
                and not _own_bindings(receiver, params[0].arg)):  # fmt: skip
            return False
        inside = {id(n) for n in ast.walk(self.factory)}
        uses = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == node.attr
                and (not isinstance(n.ctx, ast.Load) or id(n) not in inside or not _filing(n, model))]
        bound = _own_bindings(self.owner, node.attr)
        named = any(isinstance(n, ast.Constant) and n.value == node.attr for n in ast.walk(tree))  # getattr(C, "T")
        return len(bound) == 1 and not uses and not named and _empty_dict(self.owner, node.attr)

    def label(self, node: ast.AST, value: ast.AST, model: ModuleModel) -> bool:
        """``op_cls.name = name``: a public attribute no def of the file or ``nn.Module`` names, set to a constant
        or to one of the factory's own parameters (a constant at every decoration: :func:`registers_class`)."""
        if not (isinstance(node, ast.Attribute) and not node.attr.startswith("_")
                and not any(node.attr == f.rsplit(".", 1)[-1] for f in model.functions)
                and node.attr not in _module_attributes()):  # fmt: skip
            return False
        params = _arg_nodes(self.factory)[1:]
        return is_constant(value) or (isinstance(value, ast.Name) and any(
            p.arg == value.id and _own_bindings(self.factory, p.arg) == [p] for p in params))


def _filing(node: ast.Attribute, model: ModuleModel) -> bool:
    """``cls.T[key] = ...`` (the table stored into) or ``key in cls.T`` / ``key not in cls.T`` (a duplicate check):
    the table's only uses in a registry's factory."""
    up = model.parents.get(id(node))
    if isinstance(up, ast.Subscript) and up.value is node:
        return isinstance(up.ctx, ast.Store)
    return isinstance(up, ast.Compare) and len(up.ops) == 1 and isinstance(up.ops[0], ast.In | ast.NotIn) and \
        up.comparators[0] is node


def _empty_dict(owner: ast.ClassDef, name: str) -> bool:
    """``name = {}`` / ``name: Dict[...] = {}`` / ``name = dict()`` in ``owner``'s class body."""
    for stmt in owner.body:
        value: ast.expr | None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign):
            target, value = stmt.target, stmt.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id == name:
            return (isinstance(value, ast.Dict) and not value.keys) or (
                isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict"
                and not value.args and not value.keywords)
    return False


@functools.lru_cache(maxsize=1)
def _module_attributes() -> frozenset[str]:
    import torch  # local: importing the checker must not import torch

    return frozenset(dir(torch.nn.Module)) | frozenset(getattr(torch.nn.Module, "__annotations__", {}))  # training


def _class_factory(target: ast.Attribute, model: ModuleModel) -> tuple[ast.ClassDef, Def] | None:
    """``Base.register`` where ``Base`` is a class of the module bound once, with no metaclass and bases that are
    ``nn.Module`` or classes of the file, and ``register`` the one binding of that name in its body: a def decorated
    only by ``classmethod``, whose name no attribute store anywhere in the file rebinds."""
    if not (isinstance(target.value, ast.Name) and _module_bound_once(target.value.id, model)
            and _unshadowed(target, model)):  # fmt: skip
        return None
    owner = model.classes.get(target.value.id)
    if not isinstance(owner, ast.ClassDef) or owner.keywords or not all(
            resolve(b, model.aliases) == "torch.nn.Module" or
            (isinstance(b, ast.Name) and isinstance(model.classes.get(b.id), ast.ClassDef)
             and not model.classes[b.id].keywords) for b in owner.bases):  # fmt: skip
        return None
    defs = [s for s in owner.body if isinstance(s, _FUNCTION) and s.name == target.attr]
    tree = _tree(model)
    if len(defs) != 1 or len(_own_bindings(owner, target.attr)) != 1 or tree is None:
        return None
    method = defs[0]
    decorators = method.decorator_list
    if not (len(decorators) == 1 and isinstance(decorators[0], ast.Name) and decorators[0].id == "classmethod"
            and not _own_bindings(tree, "classmethod")):  # fmt: skip
        return None
    if any(isinstance(n, ast.Attribute) and n.attr == target.attr and not isinstance(n.ctx, ast.Load)
           for n in ast.walk(tree)):  # fmt: skip
        return None
    return owner, method


def _made_by(factory: Def, model: ModuleModel) -> Def | None:
    """The one def of ``factory``'s body when every ``return`` of the factory's own returns it (bound only there)."""
    inner = [n for n in factory.body if isinstance(n, _FUNCTION)]
    if len(inner) != 1 or len(_own_bindings(factory, inner[0].name)) != 1:
        return None
    returns = [r for r in ast.walk(factory)
               if isinstance(r, ast.Return) and _enclosing_def(r, model.parents) is factory]
    named = bool(returns) and all(isinstance(r.value, ast.Name) and r.value.id == inner[0].name for r in returns)
    return inner[0] if named else None


def _enclosing_def(node: ast.AST, parents: dict[int, ast.AST]) -> Def | None:
    """The def whose own body holds ``node`` (None at module level or in a lambda)."""
    parent = parents.get(id(node))
    while parent is not None and not isinstance(parent, (*_FUNCTION, ast.Lambda, ast.Module)):
        parent = parents.get(id(parent))
    return parent if isinstance(parent, _FUNCTION) else None


def _keeps_class_only(fn: Def, model: ModuleModel, registry: _Registry | None = None) -> bool:
    """``fn(cls)`` returns ``cls`` and keeps it only in a module-level table (:func:`registers_class`), or, made by
    a classmethod ``registry``, in the owner's class-level table with public labels set on it."""
    params = _arg_nodes(fn)
    if len(params) != 1 or fn.args.vararg or fn.args.kwarg or fn.decorator_list:
        return False
    cls = params[0].arg
    if _own_bindings(fn, cls) != params or any(isinstance(n, (*_FUNCTION, ast.Lambda, ast.ClassDef))
                                               for n in ast.walk(fn) if n is not fn):
        return False
    returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)]
    if not returns or not all(isinstance(r.value, ast.Name) and r.value.id == cls for r in returns):
        return False
    for use in ast.walk(fn):
        if not (isinstance(use, ast.Name) and use.id == cls) or isinstance(use.ctx, ast.Store):
            continue
        up = model.parents.get(id(use))
        if isinstance(up, ast.Return) or (isinstance(up, ast.Attribute) and up.attr in _READS):
            continue
        if isinstance(up, ast.Assign) and up.value is use and len(up.targets) == 1 and \
                isinstance(up.targets[0], ast.Subscript) and isinstance(up.targets[0].value, ast.Name) and \
                _module_bound_once(up.targets[0].value.id, model) and \
                not _own_bindings(fn, up.targets[0].value.id):  # fmt: skip
            continue
        if registry is not None and isinstance(up, ast.Assign) and up.value is use and len(up.targets) == 1 and \
                isinstance(up.targets[0], ast.Subscript) and registry.table(up.targets[0].value, fn, model):
            continue  # cls.op_registry[name] = op_cls
        store = model.parents.get(id(up))
        if registry is not None and isinstance(up, ast.Attribute) and isinstance(up.ctx, ast.Store) and \
                isinstance(store, ast.Assign) and store.targets == [up] and registry.label(up, store.value, model):
            continue  # op_cls.name = name
        return False
    return True


def hands_first_only(decorator: ast.expr, model: ModuleModel) -> bool:
    """``@decorator`` is transparent and its wrappers do nothing else with the arguments they get than hand them on,
    test their type and keep one that is a tensor: so an autograd forward's ``ctx`` reaches only the forward (fla's
    ``input_guard``; nothing can call ``ctx.apply`` and run the backward)."""
    proof = _proof_for(decorator, model)
    return proof is not None and all(proof.inert_arguments(w) for w in proof.wrappers)


def _proof_for(decorator: ast.expr, model: ModuleModel) -> _Proof | None:
    """The proof that the file's decorator ``@name`` is transparent for the def it decorates, or None."""
    decorated = model.parents.get(id(decorator))
    if not (isinstance(decorator, ast.Name) and isinstance(decorated, _FUNCTION)
            and any(d is decorator for d in decorated.decorator_list)
            and _module_bound_once(decorator.id, model) and _unshadowed(decorator, model)):  # fmt: skip
        return None
    factory = model.functions.get(decorator.id)
    if not isinstance(factory, _FUNCTION) or not factory.args.posonlyargs + factory.args.args:
        return None
    proof = _Proof(model, [a.arg for a in [*decorated.args.posonlyargs, *decorated.args.args]])
    return proof if proof.hands_on(factory, _first(factory)) else None


def _unshadowed(node: ast.expr, model: ModuleModel) -> bool:
    """The name a decorator starts with is the module's: no class body or function around the def binds it (a
    class body's ``deco = other`` above ``@deco`` decorates with ``other``)."""
    root = node
    while isinstance(root, ast.Attribute):
        root = root.value
    if not isinstance(root, ast.Name):
        return False
    scope = model.parents.get(id(model.parents.get(id(node))))
    while scope is not None and not isinstance(scope, ast.Module):
        if isinstance(scope, (*_FUNCTION, ast.ClassDef)) and _own_bindings(scope, root.id):
            return False
        scope = model.parents.get(id(scope))
    return True


def _module_bound_once(name: str, model: ModuleModel) -> bool:
    """``name`` is bound once in the module's own scope (a method or a local of that name binds another) and declared
    ``global`` nowhere."""
    tree = _tree(model)
    if tree is None or any(isinstance(n, ast.Global) and name in n.names for n in ast.walk(tree)):
        return False
    return len(_own_bindings(tree, name)) == 1


def _tree(model: ModuleModel) -> ast.Module | None:
    """The module the model was built from (the parent of its top-level statements)."""
    return next((n for n in model.parents.values() if isinstance(n, ast.Module)), None)


def _own_bindings(root: ast.AST, name: str) -> list[ast.AST]:
    """Where ``name`` is bound in ``root``'s own scope: its parameters (for a function) and its body, not in nested
    functions, lambdas, classes or comprehensions (their decorators, defaults and first iterables are ``root``'s,
    and so is a walrus inside a comprehension)."""
    out: list[ast.AST] = []
    if isinstance(root, (*_FUNCTION, ast.Lambda)):
        out += [a for a in _arg_nodes(root) if a.arg == name]
    todo: list[ast.AST] = list(root.body) if isinstance(root, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef |
                                                        ast.ClassDef) \
        else [root.body] if isinstance(root, ast.Lambda) else []  # fmt: skip
    while todo:
        node = todo.pop()
        if isinstance(node, (*_FUNCTION, ast.ClassDef)):
            if node.name == name:
                out.append(node)
            todo += [*node.decorator_list, *getattr(node, "bases", [])]
            todo += [k.value for k in getattr(node, "keywords", [])]
            if isinstance(node, _FUNCTION):
                todo += [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
            continue
        if isinstance(node, ast.Lambda):
            todo += [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
            continue
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            todo.append(node.generators[0].iter)
            out += [n.target for n in ast.walk(node) if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name)
                    and n.target.id == name]  # fmt: skip
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and node.id == name:
            out.append(node)
        elif isinstance(node, ast.alias) and (node.asname or node.name).split(".")[0] == name:
            out.append(node)
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name == name:
            out.append(node)
        elif isinstance(node, ast.MatchMapping) and node.rest == name:
            out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


def _arguments(call: ast.Call) -> Iterator[ast.expr]:
    yield from call.args
    yield from (k.value for k in call.keywords)


def _first(fn: Def) -> str:
    return [*fn.args.posonlyargs, *fn.args.args][0].arg


def _params(fn: Def | ast.Lambda) -> set[str]:
    return {a.arg for a in _arg_nodes(fn)}


def _bindings(fn: ast.AST, name: str) -> list[ast.AST]:
    return [n for bound, n in binding_sites(fn) if bound == name and n is not fn]


def _isinstance_of(test: ast.AST, name: str, types: frozenset[str] | None, model: ModuleModel) -> bool:
    """``isinstance(name, T)`` (or an ``and`` with it as a conjunct) where T is one of ``types`` (Python's type names)
    or, for ``types`` None, ``torch.Tensor``."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_isinstance_of(v, name, types, model) for v in test.values)
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance"
            and model.binding_counts.get("isinstance") is None and len(test.args) == 2 and not test.keywords
            and isinstance(test.args[0], ast.Name) and test.args[0].id == name):  # fmt: skip
        return False
    kinds = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
    if types is None:
        return bool(kinds) and all(resolve(k, model.aliases) == "torch.Tensor" for k in kinds)
    return bool(kinds) and all(isinstance(k, ast.Name) and k.id in types and model.binding_counts.get(k.id) is None
                               for k in kinds)  # fmt: skip


@dataclass(frozen=True)
class _Built:
    """How a wrapper makes what it hands on as ``*args``/``**kwargs``: its own (all None), a comprehension, or a
    loop with the one statement that fills the container."""

    comprehension: ast.ListComp | ast.DictComp | ast.GeneratorExp | None = None
    loop: ast.For | None = None
    fill: ast.stmt | None = None


class _Proof:
    """One question, with the functions already being asked about (a recursion is no proof)."""

    def __init__(self, model: ModuleModel, names: list[str]) -> None:
        self.model = model
        self.names = names  # the decorated function's positional parameters: a wrapper's named ones must match
        self.parents = model.parents
        self.asking: set[tuple[int, str]] = set()
        self.wrappers: list[Def] = []  # the wrappers whose forwarding calls the proof accepted
        self.factories: list[Def] = []  # inner decorators shown transparent (``decorator(fn)`` in input_guard)
        self.calls: set[int] = set()  # the forwarding calls themselves

    # -- the wrapped function's uses ---------------------------------------------------------------------------

    def hands_on(self, fn: Def, param: str) -> bool:
        """Every use of ``param`` (the wrapped function) in ``fn`` is one of the module docstring's."""
        if (id(fn), param) in self.asking:
            return False
        self.asking.add((id(fn), param))
        if _own_bindings(fn, param) != [a for a in _arg_nodes(fn) if a.arg == param] or any(
                isinstance(n, ast.Global | ast.Nonlocal) and param in n.names for n in ast.walk(fn)):
            return False  # rebound, or declared global/nonlocal somewhere inside
        uses = list(self._uses(fn, param))
        if not uses or not all(self._use(use, fn, param) for use in uses):
            return False
        return all(self._returns_wrapped(r, param) for r in self._own_returns(fn, param))

    def _own_returns(self, fn: Def, param: str) -> Iterator[ast.Return]:
        """The ``return`` statements of ``fn``'s own body (not of nested functions), outside code under ``if
        isinstance(param, str)``."""
        todo: list[ast.AST] = list(fn.body)
        while todo:
            node = todo.pop()
            if isinstance(node, (*_FUNCTION, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(node, ast.If) and _isinstance_of(node.test, param, _NOT_FUNCTIONS, self.model):
                todo.extend(node.orelse)
                continue
            if isinstance(node, ast.Return):
                yield node
            todo.extend(ast.iter_child_nodes(node))

    def _returns_wrapped(self, ret: ast.Return, param: str) -> bool:
        """What a decorator returns is what the decorated name is bound to: the function itself, a wrapper that
        forwards to it (shown by :meth:`_forwarding`, possibly through ``torch.compiler.disable``), what a
        decorator shown transparent makes of it, or that decorator itself (``input_guard`` called with keywords
        only); never another function that the wrapped one's callers would call instead (red team s15: a wrapper
        that calls a keyword-only default with ctx)."""
        value = ret.value
        if value is None or (isinstance(value, ast.Name) and value.id == param):
            return True
        if isinstance(value, ast.Call) and value.args and len(value.args) == 1 and not value.keywords and \
                resolve(value.func, self.model.aliases) == "torch.compiler.disable":  # fmt: skip
            value = value.args[0]
        if isinstance(value, ast.Name):
            return any(w.name == value.id and self._encloses(ret, w) for w in [*self.wrappers, *self.factories])
        return isinstance(value, ast.Call) and len(value.args) == 1 and isinstance(value.args[0], ast.Name) and \
            value.args[0].id == param and not value.keywords  # a chained decorator, shown by _use  # fmt: skip

    def _encloses(self, ret: ast.Return, inner: Def) -> bool:
        """``inner`` is defined in the function ``ret`` returns from."""
        return self._enclosing(ret) is self._enclosing(inner)

    def _uses(self, root: ast.AST, name: str) -> Iterator[ast.Name]:
        """Loads of ``name`` in ``root`` and in nested functions that do not bind it themselves, skipping code under
        ``if isinstance(name, str)`` (never true of a function)."""
        todo: list[ast.AST] = list(ast.iter_child_nodes(root))
        while todo:
            node = todo.pop()
            if isinstance(node, (*_FUNCTION, ast.Lambda)) and (name in _params(node) or _bindings(node, name)):
                for part in [*getattr(node, "decorator_list", []), *node.args.defaults,
                             *(d for d in node.args.kw_defaults if d is not None)]:  # fmt: skip
                    todo.append(part)  # evaluated where the def stands
                continue
            if isinstance(node, ast.If) and _isinstance_of(node.test, name, _NOT_FUNCTIONS, self.model):
                todo.extend([node.test, *node.orelse])
                continue
            if isinstance(node, ast.Name) and node.id == name:
                yield node  # a store too: judged (and refused) by _use
                continue
            todo.extend(ast.iter_child_nodes(node))

    def _use(self, use: ast.Name, fn: Def, param: str) -> bool:
        if not isinstance(use.ctx, ast.Load):
            return False
        up = self.parents.get(id(use))
        if isinstance(up, ast.Attribute) and up.value is use:
            return up.attr in _READS and isinstance(up.ctx, ast.Load)
        if isinstance(up, ast.Return):
            return self._enclosing(up) is fn  # the function itself, undecorated (not from inside a wrapper)
        if isinstance(up, ast.Compare) and up.left is use and len(up.ops) == 1 and \
                isinstance(up.ops[0], ast.Is | ast.IsNot) and isinstance(up.comparators[0], ast.Constant):  # fmt: skip
            return True
        if not isinstance(up, ast.Call):
            return False
        called = resolve(up.func, self.model.aliases)
        if up.func is use:
            return self._forwarding(up, fn)
        if up.args[:1] != [use] or len(up.args) != 1 or up.keywords:
            return isinstance(up.func, ast.Name) and up.func.id == "isinstance" and up.args[:1] == [use] and \
                self.model.binding_counts.get("isinstance") is None  # fmt: skip
        if called in (_WRAPS, "inspect.signature"):
            return True
        if called == "inspect.unwrap":
            return self._unread_key(up)
        returned = isinstance(self.parents.get(id(up)), ast.Return)
        if isinstance(up.func, ast.Name) and returned:
            inner = self._def_named(up.func.id, use)
            if inner is None or not self.hands_on(inner, _first(inner)):
                return False
            self.factories.append(inner)
            return True
        if isinstance(up.func, ast.Attribute) and isinstance(up.func.value, ast.Name) and returned:
            method = self._method(up.func.value.id, up.func.attr, fn)
            return method is not None and self.hands_on(method, [*method.args.posonlyargs, *method.args.args][1].arg)
        return False

    def _def_named(self, name: str, at: ast.AST) -> Def | None:
        """The def a name read at ``at`` stands for: one bound once in an enclosing function, or a module function
        bound once in the file."""
        scope = self.parents.get(id(at))
        while scope is not None and not isinstance(scope, ast.Module):
            if isinstance(scope, _FUNCTION):
                bound = _bindings(scope, name)
                if bound:
                    own = [n for n in scope.body if isinstance(n, _FUNCTION) and n.name == name]
                    return own[0] if len(bound) == 1 and len(own) == 1 and own[0] is bound[0] else None
            scope = self.parents.get(id(scope))
        found = self.model.functions.get(name)
        if isinstance(found, _FUNCTION) and self.model.binding_counts.get(name) == 1 and \
                found.args.posonlyargs + found.args.args:  # fmt: skip
            return found
        return None

    def _method(self, obj: str, attr: str, fn: Def) -> Def | None:
        """``obj.attr`` where ``obj`` is bound once in ``fn``, to an instance of a module class: its method."""
        bound = _bindings(fn, obj)
        if len(bound) != 1:
            return None
        assign = self.parents.get(id(bound[0]))
        if not (isinstance(assign, ast.Assign) and len(assign.targets) == 1 and assign.targets[0] is bound[0]
                and isinstance(assign.value, ast.Call) and isinstance(assign.value.func, ast.Name)):  # fmt: skip
            return None
        cls = assign.value.func.id
        node = self.model.classes.get(cls)
        if not isinstance(node, ast.ClassDef) or self.model.binding_counts.get(cls) != 1 or node.bases or \
                node.keywords or node.decorator_list or len(_own_bindings(node, attr)) != 1:  # fmt: skip
            return None
        tree = _tree(self.model)
        if tree is None or any(isinstance(n, ast.Attribute) and n.attr == attr and not isinstance(n.ctx, ast.Load)
                               for n in ast.walk(tree)):  # fmt: skip
            return None  # an instance attribute of that name (self.m = other) is found before the method
        method = self.model.functions.get(f"{cls}.{attr}")
        if not isinstance(method, _FUNCTION) or method.decorator_list or \
                len([*method.args.posonlyargs, *method.args.args]) < 2:  # fmt: skip
            return None
        return method

    def _unread_key(self, call: ast.Call) -> bool:
        """``TABLE[inspect.unwrap(fn)] = value`` for a module-level table that every use subscripts: its keys are
        never read back, so the function kept there is never called from it."""
        sub = self.parents.get(id(call))
        if not (isinstance(sub, ast.Subscript) and sub.slice is call and isinstance(sub.ctx, ast.Store)
                and isinstance(sub.value, ast.Name)):  # fmt: skip
            return False
        table = sub.value.id
        if self.model.binding_counts.get(table) != 1:
            return False
        for node in ast.walk(_tree(self.model) or ast.Module(body=[], type_ignores=[])):
            if isinstance(node, ast.Name) and node.id == table and isinstance(node.ctx, ast.Load):
                up = self.parents.get(id(node))
                if not (isinstance(up, ast.Subscript) and up.value is node):
                    return False
        return True

    # -- a wrapper's call of the wrapped function ------------------------------------------------------------

    def _forwarding(self, call: ast.Call, decorator: Def) -> bool:
        """``fn(p1, ..., *args, **kwargs)`` in a wrapper nested in the decorator, with the wrapper's own arguments,
        each unchanged or made contiguous if a tensor, and the wrapper only returned."""
        wrapper = self._enclosing(call)
        if wrapper is None or wrapper is decorator or not self._inside(wrapper, decorator) or \
                not self._only_returned(wrapper):  # fmt: skip
            return False
        a = wrapper.args
        if a.kwonlyargs or a.defaults or any(d is not None for d in a.kw_defaults):
            return False
        positional = [x.arg for x in [*a.posonlyargs, *a.args]]
        if positional != self.names[: len(positional)]:
            return False  # a caller's keyword must name the same parameter of the wrapper and of the function
        if any(_own_bindings(wrapper, p) != [x for x in _arg_nodes(wrapper) if x.arg == p] for p in positional):
            return False  # rebound before it is handed on
        plain = [x for x in call.args if not isinstance(x, ast.Starred)]
        starred = [x for x in call.args if isinstance(x, ast.Starred)]
        if call.args[: len(plain)] != plain or len(plain) != len(positional) or len(starred) != (a.vararg is not None):
            return False
        if not all(self._element(x, p, wrapper) for x, p in zip(plain, positional, strict=True)):
            return False
        if any(k.arg is not None for k in call.keywords) or len(call.keywords) != (a.kwarg is not None):
            return False
        if a.vararg is not None and not self._sequence(starred[0].value, a.vararg.arg, wrapper):
            return False
        if a.kwarg is not None and not self._mapping(call.keywords[0].value, a.kwarg.arg, wrapper, call):
            return False
        self.wrappers.append(wrapper)
        self.calls.add(id(call))
        return True

    # -- what else a wrapper does with its arguments -----------------------------------------------------------

    def inert_arguments(self, wrapper: Def) -> bool:
        """Every read of the wrapper's parameters, and of the items of its ``*args``/``**kwargs`` in its loops and
        comprehensions, hands them on unchanged or made contiguous, tests their type, or keeps one known to be a
        tensor (:meth:`_inert_item`)."""
        a = wrapper.args
        params = {x.arg for x in [*a.posonlyargs, *a.args, a.vararg, a.kwarg] if x is not None}
        for name in params:
            for use in self._uses(wrapper, name):
                if not isinstance(use.ctx, ast.Load):
                    continue  # a rebinding (``args = [...]``): what it binds is judged where it is read
                if not self._inert_container(use, name in {getattr(a.vararg, "arg", None), getattr(a.kwarg, "arg",
                                                                                                        None)}):
                    return False
        return True

    def _inert_container(self, use: ast.Name, container: bool) -> bool:
        up = self.parents.get(id(use))
        if isinstance(up, ast.Starred) or (isinstance(up, ast.keyword) and up.arg is None):
            return container
        if self._type_test(use) or (isinstance(up, ast.Call) and isinstance(up.func, ast.Name)
                                    and up.func.id == "len" and up.args == [use]):  # fmt: skip
            return True
        if not container:
            call = up
            return isinstance(call, ast.Call) and use in call.args and self._is_forwarding(call)
        iterated: ast.AST = use
        if isinstance(up, ast.Call) and isinstance(up.func, ast.Name) and up.func.id == "enumerate" and \
                up.args == [use]:  # fmt: skip
            iterated = up
        elif isinstance(up, ast.Attribute) and up.attr in ("items", "values") and \
                isinstance(self.parents.get(id(up)), ast.Call):  # fmt: skip
            iterated = self.parents[id(up)]
        loop = self.parents.get(id(iterated))
        if isinstance(loop, ast.For | ast.comprehension) and loop.iter is iterated:
            target = loop.target
            if isinstance(target, ast.Tuple) and len(target.elts) == 2:  # enumerate's (i, x), items()' (k, v)
                target = target.elts[1]
            if not isinstance(target, ast.Name):
                return False
            scope = loop if isinstance(loop, ast.For) else self.parents.get(id(loop))
            return all(self._inert_item(n, target.id) for n in ast.walk(scope)  # type: ignore[arg-type]
                       if isinstance(n, ast.Name) and n.id == target.id and isinstance(n.ctx, ast.Load))
        return False

    def _is_forwarding(self, call: ast.Call) -> bool:
        return id(call) in self.calls

    def _type_test(self, use: ast.Name) -> bool:
        up = self.parents.get(id(use))
        return isinstance(up, ast.Call) and isinstance(up.func, ast.Name) and up.func.id == "isinstance" and \
            up.args[:1] == [use] and self.model.binding_counts.get("isinstance") is None  # fmt: skip

    def _inert_item(self, use: ast.Name, name: str) -> bool:
        """An item of ``*args``/``**kwargs`` read in a loop: a type test, the argument of a helper that returns it
        unless it is a tensor, either side of ``x.contiguous() if isinstance(x, torch.Tensor) else x``, or kept
        (``tensor = arg``) under ``if isinstance(arg, torch.Tensor)``."""
        if self._type_test(use):
            return True
        up = self.parents.get(id(use))
        if isinstance(up, ast.Call) and up.args[:1] == [use] and self._element(up, name, self._enclosing(use)):  # type: ignore[arg-type]
            return True
        if isinstance(up, ast.IfExp) and up.test is not use:
            negated = isinstance(up.test, ast.UnaryOp) and isinstance(up.test.op, ast.Not)
            test = up.test.operand if isinstance(up.test, ast.UnaryOp) and negated else up.test
            if (up.body if negated else up.orelse) is use and _isinstance_of(test, name, None, self.model):
                return True
        if isinstance(up, ast.Attribute) and isinstance(self.parents.get(id(up)), ast.Call):
            branch = self.parents.get(id(self.parents[id(up)]))
            if isinstance(branch, ast.IfExp):
                negated = isinstance(branch.test, ast.UnaryOp) and isinstance(branch.test.op, ast.Not)
                test = branch.test.operand if isinstance(branch.test, ast.UnaryOp) and negated else branch.test
                side = branch.orelse if negated else branch.body
                if side is self.parents[id(up)] and up.attr == "contiguous" and \
                        _isinstance_of(test, name, None, self.model):  # fmt: skip
                    return True
        if isinstance(up, ast.Assign) and up.value is use and len(up.targets) == 1 and \
                isinstance(up.targets[0], ast.Name):  # fmt: skip
            return self._under_tensor_test(up, name, self._enclosing(use))  # type: ignore[arg-type]
        return False

    def _enclosing(self, node: ast.AST) -> Def | None:
        return _enclosing_def(node, self.parents)

    def _inside(self, inner: ast.AST, outer: ast.AST) -> bool:
        node = self.parents.get(id(inner))
        while node is not None and node is not outer:
            node = self.parents.get(id(node))
        return node is outer

    def _only_returned(self, wrapper: Def) -> bool:
        """The wrapper is decorated only by ``functools.wraps`` and its name is only returned (or returned through
        ``torch.compiler.disable``) by the function around it: nothing else can call it."""
        if not all(isinstance(d, ast.Call) and resolve(d.func, self.model.aliases) == _WRAPS for d in
                   wrapper.decorator_list):  # fmt: skip
            return False
        outer = self._enclosing(wrapper)
        if outer is None or len(_bindings(outer, wrapper.name)) != 1:
            return False
        for node in ast.walk(outer):
            if isinstance(node, ast.Name) and node.id == wrapper.name and isinstance(node.ctx, ast.Load):
                up = self.parents.get(id(node))
                if isinstance(up, ast.Call) and up.args == [node] and not up.keywords and \
                        resolve(up.func, self.model.aliases) == "torch.compiler.disable":  # fmt: skip
                    up = self.parents.get(id(up))
                if not isinstance(up, ast.Return):
                    return False
        return True

    def _element(self, value: ast.expr, name: str, scope: Def) -> bool:
        """``name`` itself, or ``name`` made contiguous only when it is a tensor (an identity on anything else)."""
        if isinstance(value, ast.Name):
            return value.id == name
        if isinstance(value, ast.IfExp):  # x.contiguous() if isinstance(x, Tensor) else x, or the other way round
            test = value.test
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                kept, test = value.body, test.operand
            else:
                kept = value.orelse
            return isinstance(kept, ast.Name) and kept.id == name and _isinstance_of(test, name, None, self.model)
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.args[:1] and \
                isinstance(value.args[0], ast.Name) and value.args[0].id == name and \
                not any(isinstance(x, ast.Starred) for x in value.args) and \
                all(k.arg for k in value.keywords):  # fmt: skip
            helper = self._def_named(value.func.id, value)
            return helper is not None and self._identity_unless_tensor(helper)
        return False

    def _identity_unless_tensor(self, helper: Def) -> bool:
        """A helper that returns its first argument, except under ``isinstance(arg, torch.Tensor)``."""
        if isinstance(helper, ast.AsyncFunctionDef) or helper.decorator_list or not helper.body or \
                not helper.args.posonlyargs + helper.args.args:  # fmt: skip
            return False
        arg = _first(helper)
        if _bindings(helper, arg) != [a for a in _arg_nodes(helper) if a.arg == arg]:
            return False
        if any(isinstance(n, ast.Yield | ast.YieldFrom | ast.Await) for n in ast.walk(helper)):
            return False
        last = helper.body[-1]
        if not (isinstance(last, ast.Return) and last.value is not None and self._element(last.value, arg, helper)):
            return False
        for node in ast.walk(helper):
            if isinstance(node, ast.Return) and node is not last and not self._under_tensor_test(node, arg, helper):
                return False
        return True

    def _under_tensor_test(self, node: ast.AST, name: str, fn: Def) -> bool:
        child, parent = node, self.parents.get(id(node))
        while parent is not None and parent is not fn:
            if isinstance(parent, ast.If) and child in parent.body and _isinstance_of(parent.test, name, None,
                                                                                       self.model):  # fmt: skip
                return True
            child, parent = parent, self.parents.get(id(parent))
        return False

    def _sequence(self, value: ast.expr, vararg: str, wrapper: Def) -> bool:
        """The wrapper's ``*args`` item by item: the tuple itself, a comprehension of elements over it, or a list
        built by one unconditional append per item of a loop over it."""
        if not isinstance(value, ast.Name):
            return False
        built = self._built(value.id, vararg, wrapper)
        if built is None:
            return False
        if built.comprehension is not None:
            comp = built.comprehension
            gen = comp.generators[0] if len(comp.generators) == 1 else None
            return isinstance(comp, ast.ListComp | ast.GeneratorExp) and gen is not None and not gen.ifs and \
                not gen.is_async and \
                isinstance(gen.target, ast.Name) and isinstance(gen.iter, ast.Name) and gen.iter.id == vararg and \
                self._element(comp.elt, gen.target.id, wrapper)  # fmt: skip
        if built.loop is None:
            return True
        loop, fill = built.loop, built.fill
        item: ast.expr | None = loop.target
        iterated = loop.iter
        if isinstance(iterated, ast.Call) and isinstance(iterated.func, ast.Name) and iterated.func.id == "enumerate" \
                and self.model.binding_counts.get("enumerate") is None and len(iterated.args) == 1 \
                and not iterated.keywords:  # fmt: skip
            iterated = iterated.args[0]
            item = item.elts[1] if isinstance(item, ast.Tuple) and len(item.elts) == 2 else None
        call = fill.value if isinstance(fill, ast.Expr) else None
        return isinstance(iterated, ast.Name) and iterated.id == vararg and isinstance(item, ast.Name) and \
            isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "append" and \
            isinstance(call.func.value, ast.Name) and call.func.value.id == value.id and len(call.args) == 1 and \
            not call.keywords and self._element(call.args[0], item.id, wrapper)  # fmt: skip

    def _mapping(self, value: ast.expr, kwarg: str, wrapper: Def, call: ast.Call) -> bool:
        """The wrapper's ``**kwargs`` item by item: the dict itself (never changed), a comprehension over its
        ``items()``, or a dict filled by one unconditional store per item of a loop over them."""
        if not isinstance(value, ast.Name):
            return False
        built = self._built(value.id, kwarg, wrapper, call)
        if built is None:
            return False
        if built.comprehension is not None:
            comp = built.comprehension
            gen = comp.generators[0] if len(comp.generators) == 1 else None
            if not (isinstance(comp, ast.DictComp) and gen is not None and not gen.ifs and not gen.is_async
                    and self._items_of(gen.iter, kwarg)):  # fmt: skip
                return False
            names = self._pair(gen.target)
            return names is not None and isinstance(comp.key, ast.Name) and comp.key.id == names[0] and \
                self._element(comp.value, names[1], wrapper)  # fmt: skip
        if built.loop is None:
            return True
        loop, fill = built.loop, built.fill
        names = self._pair(loop.target)
        if not self._items_of(loop.iter, kwarg) or names is None:
            return False
        target = fill.targets[0] if isinstance(fill, ast.Assign) and len(fill.targets) == 1 else None
        return isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and \
            target.value.id == value.id and isinstance(target.slice, ast.Name) and target.slice.id == names[0] and \
            self._element(fill.value, names[1], wrapper)  # type: ignore[union-attr]  # fmt: skip

    @staticmethod
    def _pair(target: ast.AST) -> tuple[str, str] | None:
        """``k, v``: the two names a loop over ``items()`` binds."""
        if isinstance(target, ast.Tuple) and len(target.elts) == 2:
            first, second = target.elts
            if isinstance(first, ast.Name) and isinstance(second, ast.Name):
                return first.id, second.id
        return None

    def _items_of(self, node: ast.AST, kwarg: str) -> bool:
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "items" \
            and isinstance(node.func.value, ast.Name) and node.func.value.id == kwarg and not node.args \
            and not node.keywords  # fmt: skip

    def _built(self, name: str, original: str, wrapper: Def, call: ast.Call | None = None) -> _Built | None:
        """How the name handed on is made in the wrapper: the wrapper's own ``*args``/``**kwargs`` never rebound
        (nor changed, for a dict, before it is handed on), a comprehension bound once in a top-level statement, or
        an empty container bound once and filled by one unconditional statement of a top-level loop without
        ``break``/``continue``/``else``; None for anything else."""
        declared = {n for x in ast.walk(wrapper) if isinstance(x, ast.Global | ast.Nonlocal) for n in x.names}
        if name in declared:
            return None
        own = [a for a in _arg_nodes(wrapper) if a.arg == name]
        assigns = [b for b in _bindings(wrapper, name) if b not in own]
        if name == original and not assigns:  # a tuple cannot change; a dict must not, before it is handed on
            return _Built() if call is None or self._unchanged(name, wrapper, call) else None
        if len(assigns) != 1:
            return None
        assign = self.parents.get(id(assigns[0]))
        if not (isinstance(assign, ast.Assign) and assign in wrapper.body and len(assign.targets) == 1
                and assign.targets[0] is assigns[0]):  # fmt: skip
            return None
        if isinstance(assign.value, ast.ListComp | ast.DictComp | ast.GeneratorExp):
            once = isinstance(assign.value, ast.GeneratorExp)  # a generator is used up by the first `*`
            return _Built(comprehension=assign.value) if self._only_handed_on(name, wrapper, assign, once) else None
        empty = (isinstance(assign.value, ast.List) and not assign.value.elts) or \
            (isinstance(assign.value, ast.Dict) and not assign.value.keys)  # fmt: skip
        if not empty:
            return None
        later = wrapper.body[wrapper.body.index(assign) + 1:]
        loops = [s for s in later if isinstance(s, ast.For) and any(self._fills(x, name) for x in s.body)]
        if len(loops) != 1 or loops[0].orelse or any(isinstance(n, ast.Break | ast.Continue)
                                                     for n in ast.walk(loops[0])):  # fmt: skip
            return None
        fills = [x for x in loops[0].body if self._fills(x, name)]
        if len(fills) != 1 or not self._only_handed_on(name, wrapper, fills[0]):
            return None
        items = {n.id for n in ast.walk(loops[0].target) if isinstance(n, ast.Name)}
        if any(bound in items for stmt in loops[0].body for bound, _ in binding_sites(stmt)):
            return None  # the item rebound in the loop (``a = 2.0 if a is None else a``) before it is kept
        return _Built(loop=loops[0], fill=fills[0])

    @staticmethod
    def _fills(stmt: ast.stmt, name: str) -> bool:
        return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt))

    def _only_handed_on(self, name: str, wrapper: Def, fill: ast.stmt | None, once: bool = False) -> bool:
        """Every read of ``name`` is in the statement that makes or fills it or is ``*name``/``**name`` in a
        call (``once``: in one call only)."""
        starred = [n for n in ast.walk(wrapper) if isinstance(n, ast.Starred) and isinstance(n.value, ast.Name)
                   and n.value.id == name]  # fmt: skip
        if once and len(starred) > 1:
            return False
        for node in ast.walk(wrapper):
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
                if fill is not None and any(n is node for n in ast.walk(fill)):
                    continue
                up = self.parents.get(id(node))
                if not (isinstance(up, ast.Starred) or (isinstance(up, ast.keyword) and up.arg is None)):
                    return False
        return True

    def _unchanged(self, name: str, wrapper: Def, call: ast.Call | None) -> bool:
        """``**kwargs`` handed on as the wrapper got it: only read (``items``, ``get``, ``len``, ``in``, ``**``)
        before the wrapper's last statement that calls the wrapped function; afterwards anything (fla's
        ``tensor_cache`` keeps it: each call of the wrapper gets a dict of its own)."""
        wrapped = call.func.id if call is not None and isinstance(call.func, ast.Name) else None
        calling = [i for i, stmt in enumerate(wrapper.body) if any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == wrapped for n in ast.walk(stmt))]
        after = {id(n) for stmt in wrapper.body[max(calling) + 1:] for n in ast.walk(stmt)} if calling else set()
        for node in ast.walk(wrapper):
            if id(node) in after:
                continue
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
                up = self.parents.get(id(node))
                if isinstance(up, ast.Starred) or (isinstance(up, ast.keyword) and up.arg is None):
                    continue
                if isinstance(up, ast.Attribute) and up.attr in _MAPPING_READS and \
                        isinstance(self.parents.get(id(up)), ast.Call):  # fmt: skip
                    continue
                if isinstance(up, ast.Compare) and node in up.comparators:
                    continue
                if isinstance(up, ast.Call) and isinstance(up.func, ast.Name) and up.func.id == "len":
                    continue
                return False
        return True


def _arg_nodes(fn: Def | ast.Lambda) -> list[ast.arg]:
    a = fn.args
    return [x for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x is not None]
