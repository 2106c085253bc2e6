"""Structural rules of the static checker: the entry point is what it looks like, and nothing rewires it.

A candidate could define an honest ``ModelNew`` and then replace it (``ModelNew = Cheat``, a second
``class ModelNew``, a class decorator), replace its ``forward`` (``self.forward = ...`` in ``__init__``,
``ModelNew.forward = ...``, a forward hook, an override of ``nn.Module._call_impl``), or shadow an
imported module name (``class nn: Module = Cheat``) so that the code the checker reads is not the code
that runs. These checks make each of those a violation.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable

from evaluator.static_model import (
    ModuleModel,
    decorator_names,
    enclosing_class,
    module_bases,
    resolve,
    scope_bindings,
    type_of_self,
)
from evaluator.static_probes import is_constant
from evaluator.static_rules import module_internals
from evaluator.static_uses import binding_sites
from evaluator.static_wrappers import registers_class

Report = Callable[[str, ast.AST, str], None]
# nn.Module methods a candidate may define (forward is the point; the rest are harmless).
_OVERRIDABLE = frozenset({"forward", "__init__", "__call__", "extra_repr", "__repr__"})


@functools.lru_cache(maxsize=1)
def _module_methods() -> frozenset[str]:
    import torch  # local: importing the checker must not import torch

    return frozenset(n for n in dir(torch.nn.Module) if callable(getattr(torch.nn.Module, n, None)))


@functools.lru_cache(maxsize=1)
def _module_attributes() -> frozenset[str]:
    """Every name ``nn.Module`` defines (methods and class attributes: ``training``, ``call_super_init``...)."""
    import torch  # local: importing the checker must not import torch

    return frozenset(dir(torch.nn.Module))


def _is_placeholder(node: ast.AST) -> bool:
    """A constant (None, (), False, 0, "") or an empty class: what an import fallback binds instead."""
    if isinstance(node, ast.ClassDef):
        trivial = all(isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
                      for s in node.body)  # fmt: skip
        return trivial and not node.bases and not node.keywords and not node.decorator_list
    return is_constant(node)


def _import_fallbacks(tree: ast.Module) -> set[int]:
    """ids of bindings in the handlers of a module-level ``try`` that imports the same name, when they bind
    a constant or an empty placeholder class (``except ImportError: DTensor = None``)."""
    ok: set[int] = set()
    todo = list(tree.body)
    while todo:
        stmt = todo.pop()
        if isinstance(stmt, ast.If):
            todo.extend([*stmt.body, *stmt.orelse])
        if not isinstance(stmt, ast.Try | getattr(ast, "TryStar", ast.Try)):
            continue
        todo.extend([*stmt.body, *stmt.orelse, *stmt.finalbody])
        imported = {(a.asname or a.name).split(".")[0] for s in ast.walk(ast.Module(body=stmt.body, type_ignores=[]))
                    if isinstance(s, ast.Import | ast.ImportFrom) for a in s.names}  # fmt: skip
        for handler in stmt.handlers:
            for inner in handler.body:
                if isinstance(inner, ast.Assign) and _is_placeholder(inner.value):
                    ok.update(id(t) for t in inner.targets if isinstance(t, ast.Name) and t.id in imported)
                elif isinstance(inner, ast.ClassDef) and inner.name in imported and _is_placeholder(inner):
                    ok.add(id(inner))
    return ok


def _local_bindings(tree: ast.Module) -> set[int]:
    """ids of binding sites inside functions, lambdas and comprehensions (locals, not module names),
    except names the function declares ``global``."""
    local: set[int] = set()
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
              ast.GeneratorExp)  # fmt: skip
    walrus = {id(n.target) for n in ast.walk(tree) if isinstance(n, ast.NamedExpr)}
    for scope in ast.walk(tree):
        if not isinstance(scope, scopes):
            continue
        declared = {n for g in ast.walk(scope) if isinstance(g, ast.Global | ast.Nonlocal) for n in g.names}
        comprehension = not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for name, node in binding_sites(scope):
            # a comprehension's walrus binds in the scope around it (the module's, at module level)
            if node is not scope and name not in declared and not (comprehension and id(node) in walrus):
                local.add(id(node))
    return local


def check_entry_definition(tree: ast.Module, model: ModuleModel, entry: str, report: Report) -> None:
    """``entry`` is bound exactly once, by a plain top-level ``class`` or ``def`` (no decorator on a class)."""
    defs = [s for s in tree.body if isinstance(s, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and s.name == entry]  # fmt: skip
    if not defs:
        return  # missing-entry is reported by the caller
    first = defs[0]
    for name, node in binding_sites(tree):
        if name == entry and node is not first and not isinstance(node, ast.arg):
            report("missing-entry", node, f"`{entry}` is bound again here (first defined at line "
                   f"{first.lineno}); the entry point must be exactly one definition, never replaced")
    if isinstance(first, ast.ClassDef):
        for cls in entry_chain(model, first) or [first]:  # the classes whose methods the entry point has
            kept = [d for d in cls.decorator_list if not registers_class(d, model)]  # a registry keeps it as it is
            if kept:
                report("patching", kept[0], f"class {cls.name} is decorated; a decorator can replace the class, so "
                       "remove it (one that only files the class in a module-level table and returns it is fine)")
            _check_entry_class(cls, report)


# PyTorch's leaf layers: parameters, buffers and plain settings, no submodules or callables made by their __init__
# (a TransformerEncoderLayer's self.linear1 / self.activation, an nn.Sequential's children would be PyTorch's
# computation called unseen: red team s32)
_LEAF_LAYER_MODULES = frozenset({f"torch.nn.modules.{m}" for m in (
    "normalization", "batchnorm", "instancenorm", "linear", "sparse", "conv", "dropout", "activation")})
_LAYERS_WITH_CHILDREN = frozenset({"MultiheadAttention"})


@functools.lru_cache(maxsize=64)
def torch_layer(dotted: str) -> bool:
    """Whether ``dotted`` names one of PyTorch's own leaf layers (``torch.nn.LayerNorm``, ``torch.nn.Linear``,
    convolutions, embeddings, activations): a base a fused module keeps for its parameters, their names in
    checkpoints and its ``extra_repr``, overriding ``forward`` (many ``FastLayerNorm(nn.LayerNorm)`` classes).
    Lazy layers are not (they change their parameters in their first call), nor containers and layers made of other
    modules."""
    parts = dotted.split(".")
    if len(parts) != 3 or parts[:2] != ["torch", "nn"] or parts[2].startswith(("_", "Lazy")):
        return False
    import torch  # local: importing the checker must not import torch

    found = getattr(torch.nn, parts[2], None)
    return isinstance(found, type) and issubclass(found, torch.nn.Module) and found is not torch.nn.Module and \
        found.__module__ in _LEAF_LAYER_MODULES and found.__name__ not in _LAYERS_WITH_CHILDREN


def _own_bases(model: ModuleModel, cls: ast.ClassDef) -> list[ast.expr]:
    """``cls``'s bases but ``abc.ABC`` (``class Base(nn.Module, ABC)``: abstract methods of its own, nothing run) and
    plain mixins of the file (:func:`_plain_mixin`)."""
    return [b for b in cls.bases if resolve(b, model.aliases) != "abc.ABC" and not _plain_mixin(model, b)]


def _plain_mixin(model: ModuleModel, base: ast.expr, depth: int = 0) -> bool:
    """``base`` is a class of the file made only of helper methods (``class BlockMixin: def block(self, n): ...``):
    bound once, undecorated, no metaclass, deriving from nothing but ``object``, ``abc.ABC`` or other such mixins, and
    binding no special name, ``forward`` or name ``nn.Module`` defines (a method or a class attribute, by ``def`` or
    assignment): in ``class ModelNew(BlockMixin, nn.Module)`` it adds methods that ``self.block(n)`` runs (followed
    like the class's own), and changes nothing PyTorch or the harness calls."""
    node = model.classes.get(base.id) if isinstance(base, ast.Name) else None
    if node is None or depth > 8 or node.keywords or node.decorator_list or model.binding_counts.get(node.name) != 1:
        return False
    bound = {name for name, _node in scope_bindings(node)}  # defs, assignments, imports: whatever the class holds
    if any(name.startswith("__") or name in ("forward", "__call__") for name in bound) or bound & _module_attributes():
        return False
    return all(resolve(b, model.aliases) in ("abc.ABC", "object") or _plain_mixin(model, b, depth + 1)
               for b in node.bases)  # fmt: skip


def _class_chain(model: ModuleModel, cls: ast.ClassDef, *, strict: bool) -> tuple[list[ast.ClassDef], str] | None:
    """``cls`` and the file's classes it derives from, one base each (and ``abc.ABC``), with the dotted name of the
    last one's base (None for any other shape; ``strict``: also when a class of the chain has keywords, a metaclass,
    or is bound more than once)."""
    chain: list[ast.ClassDef] = []
    while len(chain) <= 16 and len(bases := _own_bases(model, cls)) == 1:
        chain.append(cls)
        if strict and (cls.keywords or model.binding_counts.get(cls.name) != 1):
            return None
        base = bases[0]
        parent = model.classes.get(base.id) if isinstance(base, ast.Name) else None
        if isinstance(parent, ast.ClassDef) and parent not in chain:
            cls = parent
            continue
        return chain, resolve(base, model.aliases) or ""
    return None


def _layer_chain(model: ModuleModel, cls: ast.ClassDef) -> tuple[list[ast.ClassDef], str] | None:
    """:func:`_class_chain` down to one of PyTorch's layers (:func:`torch_layer`), else None."""
    found = _class_chain(model, cls, strict=False)
    return found if found is not None and torch_layer(found[1]) else None


@functools.lru_cache(maxsize=64)
def _layer_methods(dotted: str) -> frozenset[str]:
    """The functions PyTorch's layer ``dotted`` and its bases below ``nn.Module`` define (``forward``,
    ``reset_parameters``, ``_conv_forward``)."""
    import torch  # local: importing the checker must not import torch

    layer = getattr(torch.nn, dotted.rsplit(".", 1)[-1])
    return frozenset(name for c in layer.__mro__ if c not in (torch.nn.Module, object)
                     for name, value in vars(c).items()
                     if callable(value) or isinstance(value, staticmethod | classmethod))  # fmt: skip


def inherited_layer_method(model: ModuleModel, cls_name: str | None, owner: ast.AST, name: str) -> str | None:
    """``self.name`` or ``super().name`` read in a method of ``cls_name``, or ``Base.name`` for a class of the file,
    where it is a function a PyTorch layer the class derives from defines and no class of the file in between does
    (``super().forward(x)`` in a ``class FastLayerNorm(nn.LayerNorm)``, ``forward = Base.forward``): PyTorch's
    computation, named ``torch.nn.Layer.name``; else None."""
    named = model.classes.get(owner.id) if isinstance(owner, ast.Name) and owner.id != "self" else None
    cls = named if isinstance(named, ast.ClassDef) else model.classes.get(cls_name or "")  # Base.forward: Base's
    found = _layer_chain(model, cls) if isinstance(cls, ast.ClassDef) else None
    if found is None or name in ("__init__", "extra_repr", "__repr__") or name not in _layer_methods(found[1]):
        return None
    chain, layer = found
    if named is None and isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
        if owner.args or owner.keywords:  # super(Cls, obj): any class of the chain may be skipped
            return f"{layer}.{name}"
        chain = chain[1:]  # super(): the classes after this one
    elif named is None and not (isinstance(owner, ast.Name) and owner.id == "self") and not type_of_self(owner):
        return None  # Base.name: Base and those it derives from; self.name, type(self).name: the instance's class
    return None if _defines(chain, name) else f"{layer}.{name}"


def _defines(chain: list[ast.ClassDef], *names: str) -> bool:
    """A class of ``chain`` has a def of one of ``names`` in its body."""
    return any(isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.name in names
               for c in chain for s in c.body)  # fmt: skip


def inherited_forward(model: ModuleModel, cls_name: str) -> str | None:
    """``torch.nn.X.forward`` when calling an instance of the file's class ``cls_name`` runs a PyTorch module's own
    forward: it derives from ``torch.nn.X`` (one base each down to it) and no class of the file in between defines
    ``forward`` (``class Inner(nn.LayerNorm): pass`` held as ``self.stage``: red team s32)."""
    cls = model.classes.get(cls_name)
    found = _class_chain(model, cls, strict=False) if isinstance(cls, ast.ClassDef) else None
    if found is None or not found[1].startswith("torch.nn.") or found[1] == "torch.nn.Module":
        return None
    chain, dotted = found
    return None if _defines(chain, "forward", "__call__") else f"{dotted}.forward"


def entry_chain(model: ModuleModel, cls: ast.ClassDef) -> list[ast.ClassDef] | None:
    """The entry class and the file's classes it derives from, one base each, down to the one deriving from
    ``nn.Module`` itself (``class ModelNew(GeluTanh)`` over ``class GeluTanh(nn.Module)``) or from one of PyTorch's
    layers (:func:`torch_layer`) while a class of the chain defines ``forward`` (the layer's own would be PyTorch's
    computation); None when a class of the chain has another base, several, keywords (a metaclass), or is bound
    more than once."""
    found = _class_chain(model, cls, strict=True)
    if found is None:
        return None
    chain, dotted = found
    if dotted == "torch.nn.Module":
        return chain
    return chain if torch_layer(dotted) and _defines(chain, "forward") else None


def entry_method(model: ModuleModel, cls: ast.ClassDef, name: str) -> str | None:
    """The key of the ``name`` method the entry class runs (``forward``, ``__call__``): its own, or the nearest class
    of its :func:`entry_chain` defining it (``class ModelNew(CrossEntropyLoss): pass``); None where none does."""
    owners = [c.name for c in entry_chain(model, cls) or [cls]]
    return next((f"{c}.{name}" for c in owners if f"{c}.{name}" in model.functions), None)


def _check_entry_class(cls: ast.ClassDef, report: Report) -> None:
    methods = {s.name: s for s in cls.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)}
    seen: dict[str, ast.AST] = {}
    for stmt in cls.body:
        names: list[tuple[str, ast.AST]] = []
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append((stmt.name, stmt))
        elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names.extend((t.id, t) for t in targets if isinstance(t, ast.Name))
        for name, node in names:
            if name in seen and name not in ("forward", "__call__") and _property_accessor(node, name) and \
                    _is_property(seen[name]):  # fmt: skip
                continue  # ``@name.setter`` after ``@property def name``: the property's next accessor
            if name in seen and (name in methods or name in ("forward", "__call__")):
                report("missing-entry", node, f"{cls.name}.{name} is defined twice (first at line "
                       f"{getattr(seen[name], 'lineno', '?')}); define each method once")
            seen.setdefault(name, node)
    for name, node in methods.items():
        if name in _module_methods() and name not in _OVERRIDABLE:
            report("patching", node, f"{cls.name} overrides nn.Module.{name}, which the harness relies on; "
                   "define only __init__, forward and your own helper methods")
    for node in ast.walk(cls):
        if (isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load)
                and isinstance(node.value, ast.Name) and node.value.id == "self"
                and ((node.attr in methods and not _is_property(methods[node.attr]))
                     or node.attr in ("forward", "__call__"))):  # fmt: skip
            report("patching", node, f"assigns self.{node.attr}, replacing the method {cls.name}.{node.attr}; "
                   "store data under another attribute name")


_TYPE_VARIABLES = frozenset({"typing.TypeVar", "typing.ParamSpec", "typing.TypeVarTuple", "typing.NewType"})


def _module_scope_imports(tree: ast.Module) -> set[str]:
    """Names bound by imports that run in the module's own scope (not inside a function, unless ``global``)."""
    local_imports: set[int] = set()
    for scope in ast.walk(tree):
        if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            declared = {n for g in ast.walk(scope) if isinstance(g, ast.Global) for n in g.names}
            for n in ast.walk(scope):
                if isinstance(n, ast.Import | ast.ImportFrom):
                    local_imports.update(id(a) for a in n.names if (a.asname or a.name).split(".")[0] not in declared)
    return {(a.asname or a.name).split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)
            for a in n.names if id(a) not in local_imports}  # fmt: skip


def _harmless_rebinding(name: str, node: ast.AST, tree: ast.Module, model: ModuleModel,
                        module_imports: set[str]) -> bool:  # fmt: skip
    """Rebindings that cannot make the checker misread a name (fla pastes several modules into one file):

    * a top-level ``def``/``class`` whose name is imported only inside functions, where it is a local: the
      checker follows the definition by name wherever it is used;
    * ``F = TypeVar("F", ...)`` (ParamSpec, TypeVarTuple, NewType): an inert typing object whose attributes
      give nothing, so a use read as the module is, at worst, an error at run time;
    * a ``@triton.jit`` function named like the ``triton.language`` member it stands in for (``def tanh``
      beside ``from triton.language.extra.libdevice import tanh``): either binding is device code, which only
      kernels call, and every jit body is checked as kernel code.
    """
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node in tree.body:
        if name not in module_imports:
            return True
    parent = model.parents.get(id(node))
    if isinstance(node, ast.Name) and isinstance(parent, ast.Assign) and parent.targets == [node]:
        value = parent.value
        if isinstance(value, ast.Call) and resolve(value.func, model.aliases) in _TYPE_VARIABLES and value.args \
                and isinstance(value.args[0], ast.Constant) and isinstance(value.args[0].value, str):  # fmt: skip
            return True
    if isinstance(node, ast.FunctionDef) and "triton.jit" in decorator_names(node, model.aliases):
        paths = [model.aliases.get(name, ""), *model.alias_alternatives.get(name, [])]
        return all(p.startswith("triton.language.") for p in paths)
    return False


def check_rebinding(tree: ast.Module, model: ModuleModel, imported: set[str], report: Report) -> None:
    """No imported name is rebound; no module-level class or function is patched from outside."""
    allowed = _import_fallbacks(tree) | _local_bindings(tree)
    import_nodes = {id(a) for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom) for a in n.names}
    module_imports = _module_scope_imports(tree)
    for name, node in binding_sites(tree):
        if name in imported and id(node) not in allowed and id(node) not in import_nodes:
            if _harmless_rebinding(name, node, tree, model, module_imports):
                continue
            what = model.aliases.get(name, name)
            report("patching", node, f"rebinds `{name}`, which an import binds to `{what}`; the checker reads "
                   f"`{name}` as `{what}` everywhere, so pick another name")
    top_level = set(model.classes) | {k for k in model.functions if "." not in k} | set(model.jit_kernels)
    tables = set(model.constants)  # module-level names: an item of one may be a class or function of the file
    methods = {key.rsplit(".", 1)[1] for key, fn in model.functions.items() if "." in key and not _is_property(fn)}
    class_aliases = _class_aliases(tree, model)
    loop_items = {t.id for n in ast.walk(tree) if isinstance(n, ast.For | ast.AsyncFor | ast.comprehension)
                  for t in ast.walk(n.target) if isinstance(t, ast.Name) and _over_table(n.iter, tables)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            root, item = node.value, False
            while isinstance(root, ast.Attribute | ast.Subscript):
                item = item or isinstance(root, ast.Subscript)
                root = root.value
            if isinstance(root, ast.Name) and root.id in top_level:
                report("patching", node, f"assigns an attribute of `{root.id}` from outside its definition; "
                       "keep state on instances (self) instead of patching classes or functions")
            elif isinstance(root, ast.Name) and ((item and root.id in tables) or root.id in loop_items):
                # REGISTRY["model"].forward = ..., for cls in REGISTRY.values(): cls.forward = ... (red team s31)
                report("patching", node, f"assigns an attribute of an item of the module-level `{root.id}`, which "
                       "may hold the file's classes or functions; keep state on instances (self) instead")
            elif node.attr in ("forward", "__call__") or (node.attr in methods and isinstance(root, ast.Name) and (
                    root.id in class_aliases or (root.id == "self" and node.attr in _own_methods(node, model)))):
                # _c = ModelNew; _c.forward = ..., self.forward = partial(...) in a held module, self.native = ... where
                # the class defines native (red team s32); self.scale = 1.0 beside another class's scale() is data
                report("patching", node, f"assigns `.{node.attr}`, replacing a method of the object: a method is "
                       "what its def says; store data under another attribute name")


def _class_aliases(tree: ast.Module, model: ModuleModel) -> set[str]:
    """Names bound to one of the file's classes other than by its ``class`` statement (``_c = ModelNew``, a loop
    over ``(ModelNew,)``): an attribute stored on one is stored on the class."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.NamedExpr):
            value = node.value
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            value, targets = node.iter, [node.target]
        else:
            continue
        items = value.elts if isinstance(value, ast.Tuple | ast.List | ast.Set) else [value]
        if any(isinstance(n, ast.Name) and n.id in model.classes for n in items):  # the class itself, not a call
            for target in targets:
                names = target.elts if isinstance(target, ast.Tuple | ast.List) else [target]
                out.update(t.id for t in names if isinstance(t, ast.Name))
    return out - set(model.classes)


def _own_methods(node: ast.AST, model: ModuleModel) -> set[str]:
    """The methods of the class whose method holds ``node`` (and of the file's classes it derives from)."""
    cls = enclosing_class(node, model)
    if cls is None:
        return set()
    owners = set(module_bases(model, cls))
    return {key.rsplit(".", 1)[1] for key in model.functions if key.rsplit(".", 1)[0] in owners}


def property_roots(tree: ast.Module) -> list[str]:
    """Every property accessor of the file's classes (getter, setter, deleter: ``Cls.name``): Python runs one on a
    read, store or ``del`` of the attribute through any name holding the instance (``me = self; me.p = x``, a
    function's parameter), which the call graph does not follow, so each is judged as forward-path code."""
    return [f"{cls.name}.{fn.name}" for cls in tree.body if isinstance(cls, ast.ClassDef)
            for fn in cls.body if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and _is_property(fn)]


def _is_property(fn: ast.AST) -> bool:
    """A def made a property (``@property``, ``@name.setter``): storing to its name calls the setter."""
    return isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and (_property_accessor(fn, fn.name) or any(
        (isinstance(d, ast.Name) and d.id in ("property", "cached_property")) or
        (isinstance(d, ast.Attribute) and d.attr == "cached_property") for d in fn.decorator_list))


def _over_table(node: ast.AST, tables: set[str]) -> bool:
    """A loop over a module-level name, or its ``.values()``/``.items()``/``.keys()``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args and \
            node.func.attr in ("values", "items", "keys"):  # fmt: skip
        node = node.func.value
    return isinstance(node, ast.Name) and node.id in tables


def check_class_members(tree: ast.Module, report: Report) -> None:
    """A method is bound once in its class's body: the checker judges a method (``forward``, an autograd Function's
    ``forward``/``setup_context``/``backward``) by its ``def``, so another binding of that name in the same body
    (``forward = staticmethod(other)``, a second def, an import, a loop or ``with`` target, a match capture) would
    make the class hold what was never judged. A property's ``@name.setter``/``getter``/``deleter`` defs are the one
    honest repetition."""
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        sites: dict[str, list[ast.AST]] = {}
        for name, node in scope_bindings(cls):
            sites.setdefault(name, []).append(node)
        for name, nodes in sites.items():
            defs = [n for n in nodes if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
            if not defs or len(nodes) == 1:
                continue
            first = min(nodes, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
            for node in nodes:
                if node is first or _property_accessor(node, name):
                    continue
                report("patching", node, f"`{name}` is bound again in class {cls.name}'s body (first at line "
                       f"{getattr(first, 'lineno', '?')}); the checker judges a method by its def, so bind each "
                       "method once")


def _property_accessor(node: ast.AST, name: str) -> bool:
    """``@name.setter`` (``getter``, ``deleter``) on a def of the same name: the property's next accessor."""
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or len(node.decorator_list) != 1:
        return False
    dec = node.decorator_list[0]
    return (isinstance(dec, ast.Attribute) and dec.attr in ("setter", "getter", "deleter")
            and isinstance(dec.value, ast.Name) and dec.value.id == name)


def check_hooks(tree: ast.Module, report: Report) -> None:
    """No module, autograd or state-dict hooks, and no nn.Module internals (hook tables, ``_modules``)."""
    internals = module_internals()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr in internals
                and isinstance(node.value, ast.Name) and node.value.id == "self"):  # fmt: skip
            report("private-api", node, f"touches nn.Module internal `self.{node.attr}` (hooks, submodule "
                   "tables, call machinery); remove it and use plain attributes")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if attr.startswith(("register_", "_register_")) and "hook" in attr:
                report("patching", node, f"`{attr}` installs a hook that changes what the module runs or "
                       "returns; remove it and do the work in forward")
