"""The forward path of a candidate: which functions the entry point can run, and where kernels launch.

Conservative on purpose: a reference to a function (not only a call) is an edge, every method of a
helper class instantiated on the path is reachable (with the methods it inherits from the module's own
classes), and the hooks in a Triton kernel's decorators (autotune ``pre_hook``, ``heuristics`` lambdas)
run at every launch, so they are roots. A class named only in a type annotation is no edge: an
annotation is never called (``from __future__ import annotations`` leaves it a string; evaluated, it
is kept in ``__annotations__``, which only dunder access and ``typing.get_type_hints`` read back, both
refused), so fla's backend registry, whose annotations name a backend class that nothing running
instantiates, does not make that class's methods reachable.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterator

from evaluator.static_library import WRAP_TRITON, custom_op_key
from evaluator.static_model import (
    FunctionNode,
    ModuleModel,
    binding_key,
    const_getattr,
    enclosing_class,
    module_bases,
    resolve,
    type_of_self,
)
from evaluator.static_uses import Use, enclosing_scope, in_inert_annotation, main_guard, name_loads, use_of


def made_at_definition(model: ModuleModel, cls: str) -> bool:
    """``cls`` (or one of the module's own classes it derives from) is an ``enum`` class, whose class statement makes
    every member (an instance, kept by the class and by whatever its ``__init__`` stores it in), or has an explicit
    ``metaclass=``, which may call any method or make instances when the class is made."""
    for owner in module_bases(model, cls):
        node = model.classes.get(owner)
        if not isinstance(node, ast.ClassDef):
            continue
        if any(k.arg == "metaclass" for k in node.keywords):
            return True
        if any((resolve(b, model.aliases) or "").startswith("enum.") for b in node.bases):
            return True
    return False


def _class_methods(model: ModuleModel, cls: str) -> list[str]:
    if cls in model.autograd_functions:
        wanted = ("forward",)  # backward is not on the forward path
        return [f"{cls}.{m}" for m in wanted if f"{cls}.{m}" in model.functions]
    bases = module_bases(model, cls)
    prefixes = tuple(f"{name}." for name in bases)
    narrow = all(_plain_or_module(model, name) for name in bases)
    return [k for k in model.functions
            if k.startswith(prefixes) and (not narrow or _may_run(model, k.rsplit(".", 1)[1]))]


def _instance_methods(model: ModuleModel, cls: str, use: ast.AST) -> list[str]:
    """The methods using an instance of ``cls`` that exists already (at ``use``) may run: calling it
    (``self.table(idx)``) runs its forward and what Python and nn.Module call unnamed, reading a method
    (``self.table.m``) that method too (``self.table.__init__(...)`` makes it again); kept anywhere else, any method
    but ``__init__`` / ``__new__``, which ran when it was made (naming the class, where that happens, runs them)."""
    methods = _class_methods(model, cls)
    parent = model.parents.get(id(use))
    if isinstance(parent, ast.Attribute) and parent.value is use:  # self.table.m: m, and what Python runs unnamed
        return [k for k in methods if _runs_unnamed(k.rsplit(".", 1)[1]) or k.rsplit(".", 1)[1] == parent.attr]
    if isinstance(parent, ast.Call) and parent.func is use:  # self.table(idx): forward and the call machinery
        return [k for k in methods if _runs_unnamed(k.rsplit(".", 1)[1]) and k.rsplit(".", 1)[1] not in _CONSTRUCTION]
    return [k for k in methods if k.rsplit(".", 1)[1] not in _CONSTRUCTION]


def _runs_unnamed(method: str) -> bool:
    """A method Python or nn.Module may call on an instance without code naming it (``forward``, a dunder,
    nn.Module's own machinery); a method only the file names runs where the file calls it (:func:`callees`)."""
    return method in ("forward", "__call__") or (method.startswith("__") and method.endswith("__")) or \
        method in _called_unnamed()


_CONSTRUCTION = ("__init__", "__new__")


def self_owners(model: ModuleModel, cls: str) -> list[str]:
    """The classes whose method ``self.attr`` in a method of ``cls`` may be: ``cls``, the file's classes it derives
    from (inherited methods) and those deriving from it with their other bases (overrides: a template method, the
    base's forward calling ``self.forward_impl`` that the class ModelNew derives from defines, or a sibling mixin)."""
    below = [name for name in model.classes if name != cls and cls in module_bases(model, name)]
    # and the other bases of those (a sibling mixin defining the method: class Rows(Template, SoftmaxImpl))
    return list(dict.fromkeys([*module_bases(model, cls), *(b for name in below for b in module_bases(model, name))]))


def _plain_or_module(model: ModuleModel, cls: str) -> bool:
    """``cls`` derives from nothing, ``nn.Module`` or the file's own classes: Python and PyTorch call none of its
    methods unnamed but those :func:`_may_run` lists (an Enum's ``_missing_``, a dict's ``__missing__`` or a
    library base's hooks would be called unnamed: every method of such a class counts)."""
    node = model.classes.get(cls)
    return node is not None and not node.keywords and all(
        (isinstance(b, ast.Name) and b.id in model.classes)
        or resolve(b, model.aliases) in ("torch.nn.Module", "object") for b in node.bases)


def _may_run(model: ModuleModel, method: str) -> bool:
    """Whether an instance's method ``method`` may run: one Python or nn.Module calls unnamed (``forward``,
    ``__init__``, a dunder, an override of nn.Module's own machinery such as ``_call_impl``), or one the file names
    anywhere (``self.forward_cuda``, ``forward = forward_cuda``, ``"forward_cuda"``). A method nothing names (vLLM's
    ``forward_native`` reference beside the kernel's ``forward``) never runs."""
    return _runs_unnamed(method) or method in model.mentioned


@functools.cache
def _called_unnamed() -> frozenset[str]:
    """Method names Python, its library or PyTorch call on an object without the caller's code naming them: nn.Module's
    own machinery (``_call_impl``, ``_apply``, ``extra_repr``) and the protocols of containers, files and generators
    (``keys`` for ``f(**obj)``, ``write`` for ``print(file=obj)``, ``close`` for ``contextlib.closing(obj)``: red team
    s31)."""
    import io
    import types

    import torch

    kinds = (torch.nn.Module, dict, list, set, frozenset, tuple, str, bytes, io.IOBase, io.TextIOBase,
             io.BufferedIOBase, io.RawIOBase, types.GeneratorType, types.CoroutineType)
    return frozenset(name for kind in kinds for name in dir(kind))


def callees(model: ModuleModel, key: str) -> set[str]:
    """Function keys that the function ``key`` may run: calls and references, conservatively."""
    fn = model.functions[key]
    cls = key.split(".")[0] if "." in key else None
    out: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute) and node.attr in _MODULE_ACCESSORS:
            # self.modules(), self.get_submodule(...): any held module of the file, any method of it by name
            out.update(m for kind in model.instances.values() if kind.startswith("class:")
                       for m in _class_methods(model, kind[6:]) if m.rsplit(".", 1)[1] not in _CONSTRUCTION)
        if (item := _item_key(node)) is not None:
            held = model.instances.get(item, "")  # self.impls[name].run(x), self.impls.get(k).run(x): its instance
            if held.startswith("class:"):
                out.update(_instance_methods(model, held[6:], node))
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in model.functions:
                out.add(node.id)
            elif node.id in model.classes and not in_inert_annotation(node, model.parents):
                out.update(_class_methods(model, node.id))
            instance = model.instances.get(node.id, "")
            if instance.startswith("class:"):
                out.update(_instance_methods(model, instance[6:], node))
        elif isinstance(node, ast.Attribute) and model.custom_ops:
            op = model.custom_ops.get(custom_op_key(resolve(node, model.aliases) or "") or "")
            if op is not None and op.function:
                out.add(op.function)  # torch.ops.mylib.op(...): runs the function registered as that op
        if isinstance(node, ast.Attribute) and _unknown_receiver(model, node):
            # recv[k].m(...) on an item the checker does not follow (a table of several classes, or one changed or
            # handed on): the method ``m`` of any class of the file
            out.update(_methods_named(model, node.attr))
        elif isinstance(node, ast.Attribute) and _unknown_name(model, node) and node.attr not in _CONSTRUCTION:
            # me.m(...) on a name the checker does not follow (``me = self``, a parameter handed ``self``, a loop
            # variable): the method ``m`` of any nn.Module class of the file (ModelNew's own among them)
            out.update(_methods_named(model, node.attr, lambda c: _is_module(model, c)))
        elif isinstance(node, ast.Attribute) and _unknown_attribute(model, node.value, node) and \
                node.attr not in _CONSTRUCTION:  # fmt: skip
            # self.helper.m(...) on an attribute holding what the checker does not know (a factory's instance):
            # the method ``m`` of any class of the file
            out.update(_methods_named(model, node.attr))
        elif isinstance(node, ast.Attribute) and cls is not None and _unknown_attribute(model, node, node):
            owners = self_owners(model, cls)
            if not any(f"{owner}.{node.attr}" in model.functions for owner in owners):
                # self.helper(x): what calling an instance runs, of any other class of the file
                out.update(m for called in ("__call__", "forward") for m in _methods_named(model, called)
                           if m.rsplit(".", 1)[0] not in owners)  # fmt: skip
        if isinstance(node, ast.Attribute | ast.Call) and cls is not None:
            if isinstance(node, ast.Attribute):
                key_, attr = binding_key(node), node.attr
            elif (lookup := const_getattr(node)) is not None and binding_key(lookup[0]) == "self":
                attr = lookup[1]
                key_ = f"self.{attr}"
            else:
                continue
            if isinstance(node, ast.Attribute) and (type_of_self(node.value) or (
                    isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                    and node.value.func.id == "super")):  # fmt: skip
                key_ = "self"  # super().attr, type(self).attr: a method of this class or one it derives from
            if key_ is None:
                continue
            for owner in self_owners(model, cls) if key_.split(".")[0] == "self" else [cls]:
                if f"{owner}.{attr}" in model.functions:
                    out.add(f"{owner}.{attr}")
            instance = model.instances.get(key_, "")
            if instance.startswith("class:"):
                out.update(_instance_methods(model, instance[6:], node))
    out.discard(key)
    return out


def _methods_named(model: ModuleModel, name: str, keep: Callable[[str], bool] = lambda _cls: True) -> list[str]:
    """``Cls.name`` for each class of the file defining a method ``name`` that ``keep`` keeps."""
    return [f"{c}.{name}" for c in model.classes if f"{c}.{name}" in model.functions and keep(c)]


def _unknown_name(model: ModuleModel, node: ast.Attribute) -> bool:
    """``node`` is ``name.m`` called, ``name`` a plain name that is not ``self``, a class of the file, an instance it
    made (:data:`ModuleModel.instances`) or an import."""
    recv, up = node.value, model.parents.get(id(node))
    return isinstance(up, ast.Call) and up.func is node and isinstance(recv, ast.Name) and recv.id != "self" and \
        recv.id not in model.classes and recv.id not in model.instances and resolve(recv, model.aliases) is None


def _unknown_attribute(model: ModuleModel, recv: ast.expr, called: ast.Attribute) -> bool:
    """``called`` is called (``self.attr.m(...)`` or ``self.attr(...)``), ``recv`` is ``self.attr``, which holds no
    instance the file made (:data:`ModuleModel.instances`), kernel or extension the checker knows."""
    up = model.parents.get(id(called))
    key = binding_key(recv) if isinstance(recv, ast.Attribute) else None
    return isinstance(up, ast.Call) and up.func is called and key is not None and key.startswith("self.") and \
        "[" not in key and key not in model.instances and key not in model.launchables and key not in model.extensions


def _item_key(node: ast.AST) -> str | None:
    """``t[]`` for ``t[k]`` read and ``t.get(k, ...)`` (an item of the table bound as ``t``), else None."""
    if isinstance(node, ast.Subscript):
        return binding_key(node) if isinstance(node.ctx, ast.Load) else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        inner = binding_key(node.func.value)
        return None if inner is None or inner.endswith("[]") else f"{inner}[]"
    return None


def _unknown_receiver(model: ModuleModel, node: ast.Attribute) -> bool:
    """``node`` is ``recv.m`` called, ``recv`` an item of a table (``t[k]``, ``t.get(k)``) whose items the checker
    does not know (not one of :data:`ModuleModel.instances`). Other receivers it does not type are
    :func:`_unknown_name` and :func:`_unknown_attribute`, and :func:`made_helper_roots` covers the rest."""
    recv, up = node.value, model.parents.get(id(node))
    if not (isinstance(up, ast.Call) and up.func is node):
        return False
    item = _item_key(recv)
    return item is not None and model.instances.get(item, "") == ""


# nn.Module's accessors that hand out its submodules (red team s32: `for m in self.modules(): m.native(x)`)
_MODULE_ACCESSORS = frozenset({"children", "named_children", "modules", "named_modules", "get_submodule",
                               "_modules"})


def made_helper_roots(model: ModuleModel, tree: ast.Module, entry: str, path: list[str]) -> list[str]:
    """Every method (but construction) of a plain class of the file whose instance is made at import or while
    ``entry`` is built or runs (``Cls(...)`` in the module's own statements, in a function reachable from its
    ``__init__`` or on the forward ``path``: ``self.helper = make()`` with ``make`` returning ``_Helper()``,
    ``_REFS = [_Eager()]``): once made, the instance may reach forward through names the call
    graph cannot type (a local, ``next(iter(...))``, a bound method kept as a value, ``getattr``), so its methods are
    judged as forward-path code. nn.Module classes are not: calling a held module runs its forward, and their other
    methods (``reset_parameters``) stay construction."""
    inits = [f"{c}.__init__" for c in module_bases(model, entry) if f"{c}.__init__" in model.functions]
    made: set[str] = set()
    module_level = [s for s in tree.body if not isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]
    for scope in [*(model.functions[key] for key in dict.fromkeys([*reachable(model, inits), *path])), *module_level]:
        for node in ast.walk(scope):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in model.classes and \
                    node.func.id not in model.autograd_functions and not _is_module(model, node.func.id):  # fmt: skip
                made.add(node.func.id)
    return [m for cls in sorted(made) for m in _class_methods(model, cls) if m.rsplit(".", 1)[1] not in _CONSTRUCTION]


def hook_roots(model: ModuleModel) -> list[str]:
    """Functions named in the decorators of Triton kernels (autotune/heuristics hooks run at each launch), and the
    methods of the file's classes named there as an attribute of a name."""
    roots = []
    for node in model.jit_kernels.values():
        for dec in getattr(node, "decorator_list", []):
            for sub in ast.walk(dec):
                if isinstance(sub, ast.Name) and sub.id in model.functions:
                    roots.append(sub.id)
                elif isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and \
                        resolve(sub.value, model.aliases) is None:  # fmt: skip
                    # _hooks.fill, Hooks.fill: a method of the file's classes (an instance's, a class's)
                    roots.extend(_methods_named(model, sub.attr))
    return roots


# Registrations that make a function another implementation of an operator (``@op.register_kernel("cpu")``,
# ``torch.library.impl``): PyTorch runs it instead of the function handed to ``custom_op``, below the Python
# dispatch key, whenever the op runs on that device.
_IMPLEMENTATION_REGISTRATIONS = frozenset({"register_kernel", "register_torch_dispatch", "register_vmap", "impl"})


def implementation_roots(model: ModuleModel, tree: ast.Module) -> list[str]:
    """Functions decorated as an operator's implementation (``@my_op.register_kernel("cpu")``,
    ``@torch.library.register_kernel(...)``, ``@torch.library.impl(...)``): they run when the op is called from the
    forward path, so they are roots (a function passed as an argument instead is a stored root already)."""
    roots = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.name not in model.functions:
            continue
        for dec in node.decorator_list:
            func = dec.func if isinstance(dec, ast.Call) else dec
            if isinstance(func, ast.Attribute) and func.attr in _IMPLEMENTATION_REGISTRATIONS:
                roots.append(node.name)
                break
    return roots


def _backward_argument(model: ModuleModel, call: ast.Call) -> ast.AST | None:
    """The backward function given to ``op.register_autograd(bwd, ...)`` / ``torch.library.register_autograd(
    "ns::op", bwd, ...)``: it runs in the backward pass, like ``autograd.Function.backward``."""
    func = call.func
    if resolve(func, model.aliases) == "torch.library.register_autograd":
        index = 1
    elif isinstance(func, ast.Attribute) and func.attr == "register_autograd" and isinstance(func.value, ast.Name) \
            and func.value.id in {op.function for op in model.custom_ops.values()}:  # fmt: skip
        index = 0
    else:
        return None
    return call.args[index] if len(call.args) > index else None


def stored_roots(model: ModuleModel, tree: ast.Module, unread: set[int] | None = None,
                 entry: str | None = None) -> list[str]:
    """Functions and classes whose reference is stored as a value, not called: they become roots.

    ``self.fn = launch`` in ``__init__``, ``OPS = {"a": helper}`` or ``partial(helper)`` can run from
    the forward path through names the checker cannot follow. Base classes, decorators, arguments of
    ``super``/``isinstance``/``type``, ``self.apply(init_fn)`` (nn.Module.apply, run once while
    building), classes named in annotations that are never evaluated, and an autograd Function whose
    ``Cls.apply(...)`` is called where it stands inside a function (any other method, a classmethod factory among
    them, may hand out an instance, so the class stays a root; the call runs when that function runs, which
    :func:`callees` follows; fla's ``layer_norm_linear``, which nothing calls, does not make
    ``LayerNormLinearFunction.forward`` a root) are not stored references; nor is what the value of a module-level
    binding no running code reads names (``unread``: ids of those statements, evaluator.static_unread).
    """
    skip: set[int] = set()
    never: set[int] = set()  # in code that never runs: an unread binding's value, a `__main__` block
    for stmt in tree.body:
        if id(stmt) in (unread or ()):
            never.update(id(n) for n in ast.walk(stmt))
        elif isinstance(stmt, ast.If) and main_guard(stmt, tree, model.parents):  # its body never runs (not `else:`)
            never.update(id(n) for part in stmt.body for n in ast.walk(part))
    skip |= never
    functions = {id(f) for f in model.functions.values() if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)}
    # a lambda made outside any def (at module level, in a class body, a default or a decorator) is a value that can
    # run from anywhere, whatever name it is kept under (a walrus, an attribute): what it calls is a root
    loose = {id(n) for n in ast.walk(tree) if isinstance(n, ast.Lambda) and not _in_a_body(n, model, functions)}
    # and one made in a body that leaves it (self.go = lambda t: helper(t), a nested def stored or returned): what
    # it calls may run from anywhere too (red team s32)
    loose |= {id(n) for n in ast.walk(tree) if _kept_callable(n, model, functions)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and _enclosing_callable(node, model, functions) in loose):
                skip.add(id(node.func))
            func = node.func
            if (isinstance(func, ast.Name) and func.id in ("super", "isinstance", "issubclass", "type")) or (
                isinstance(func, ast.Attribute) and func.attr == "apply" and binding_key(func.value) == "self"
            ):
                skip.update(id(a) for a in node.args)
            backward = _backward_argument(model, node)
            if backward is not None:
                skip.add(id(backward))
            if isinstance(func, ast.Attribute) and func.attr == "apply" and isinstance(func.value, ast.Name) \
                    and func.value.id in model.autograd_functions and _in_a_body(node, model, functions):
                skip.add(id(func.value))  # Cls.apply(...) in a function: runs when it runs (callees follows it)
        elif isinstance(node, ast.ClassDef):
            skip.update(id(b) for b in node.bases)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            skip.update(id(d) for d in node.decorator_list)
    # an enum's members (and what a metaclass makes) exist from the class statement on, wherever they are kept
    roots = [m for cls in model.classes if made_at_definition(model, cls) for m in _class_methods(model, cls)]
    used = _classes_with_instances(model, tree, entry)
    for kept, where in _escaping_instances(model, tree):
        if id(where) not in never:  # an instance kept where the checker cannot follow its calls: its methods may run
            roots.extend(_instance_methods(model, kept, where))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and id(node) not in skip:
            if node.id in model.functions:
                roots.append(node.id)
            elif node.id in model.classes and not in_inert_annotation(node, model.parents):
                # a stored class runs its methods, not (again) its __init__
                roots.extend(m for m in _class_methods(model, node.id) if not m.endswith(".__init__"))
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and id(node) not in skip and \
                isinstance(node.value, ast.Name) and node.value.id == "self" and \
                (cls := enclosing_class(node, model)) is not None and cls in used:  # fmt: skip
            # a bound method kept as a value (vLLM's ``self._forward_method = self.dispatch_forward()``, which returns
            # ``self.forward_cuda``) by a class that has instances: it may run from anywhere
            roots.extend(f"{owner}.{node.attr}" for owner in self_owners(model, cls)
                         if f"{owner}.{node.attr}" in model.functions)
    return roots


def _escaping_instances(model: ModuleModel, tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """(class, node) for each instance of an nn.Module class of the file that leaves the names :func:`callees` follows:
    made other than as ``name = Cls(...)`` / ``self.attr = Cls(...)`` (in a list, handed on, returned), or such a
    name read other than to call it or read an attribute of it (``self.rows = [self.total]``, ``fn = self.total``;
    red team s32)."""
    modules = {cls for cls in model.classes if _is_module(model, cls)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in modules:
            up = model.parents.get(id(node))
            if (isinstance(up, ast.Call) and up.func is node) or isinstance(up, ast.Attribute):
                continue  # Cls()(x), Cls().method(x): called where it is made (callees follows the class)
            target = up.targets[0] if isinstance(up, ast.Assign) and len(up.targets) == 1 else None
            in_class_body = isinstance(model.parents.get(id(up)), ast.ClassDef)  # shared = Impl(): self.shared(x)
            if in_class_body or model.instances.get(binding_key(target) or "" if target is not None else "") != \
                    f"class:{node.func.id}":  # fmt: skip
                yield node.func.id, node
        elif isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Load):
            kind = model.instances.get(binding_key(node) or "", "")
            up = model.parents.get(id(node))
            called = isinstance(up, ast.Call) and up.func is node
            if kind.startswith("class:") and kind[6:] in modules and not called and not isinstance(up, ast.Attribute):
                yield kind[6:], node


def _is_module(model: ModuleModel, cls: str) -> bool:
    """``cls`` or a class of the file it derives from has a base of ``torch.nn`` (``nn.Module``, a layer, the module
    class under another path): calling an instance runs its forward."""
    return any((resolve(b, model.aliases) or "").startswith("torch.nn.") for owner in module_bases(model, cls)
               if isinstance(node := model.classes.get(owner), ast.ClassDef) for b in node.bases)


def _classes_with_instances(model: ModuleModel, tree: ast.Module, entry: str | None) -> set[str]:
    """The file's classes that may have instances: the entry's chain, and classes named anywhere outside their own
    body (made, stored, derived from), with the classes they derive from (fla's ``NormParallel``, named nowhere,
    has none)."""
    named = {entry} if entry in model.classes else set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in model.classes and \
                enclosing_class(node, model) != node.id:  # fmt: skip
            named.add(node.id)
    return {base for cls in named for base in module_bases(model, cls)}


def _in_a_body(node: ast.AST, model: ModuleModel, functions: set[int]) -> bool:
    """``node`` stands in the body of one of the module's ``def`` functions or methods (``functions``: their ids;
    nested defs and lambdas included: they exist only once it runs, and the call graph follows them from it), not
    at module level, in a class body, in a lambda bound there, or in a def's defaults, decorators or annotations,
    which run where the def stands: from there a stored reference may run from anywhere."""
    child, parent = node, model.parents.get(id(node))
    while parent is not None:
        if id(parent) in functions and any(child is s for s in getattr(parent, "body", ())):
            return True
        child, parent = parent, model.parents.get(id(parent))
    return False


def _enclosing_callable(node: ast.AST, model: ModuleModel, functions: set[int]) -> int | None:
    """The id of the innermost lambda or nested def around ``node`` (not one of the module's functions or methods,
    ``functions``), else None."""
    parent = model.parents.get(id(node))
    while parent is not None:
        if isinstance(parent, ast.Lambda) or (isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef)
                                              and id(parent) not in functions):  # fmt: skip
            return id(parent)
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module):
            return None
        parent = model.parents.get(id(parent))
    return None


def _kept_callable(node: ast.AST, model: ModuleModel, functions: set[int]) -> bool:
    """A lambda not called where it stands, or a nested def whose name is read other than to call it or return it
    (stored, handed on; a returned one goes where its factory's callers keep it, a decorator's wrapper among them)."""
    up = model.parents.get(id(node))
    if isinstance(node, ast.Lambda):
        return not (isinstance(up, ast.Call) and up.func is node)
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or id(node) in functions:
        return False
    scope = enclosing_scope(node, model.parents)
    return any(not isinstance(model.parents.get(id(n)), ast.Return) and use_of(n, model.parents) is not Use.CALLED
               for n in name_loads(scope, node.name))


def reachable(model: ModuleModel, roots: list[str]) -> list[str]:
    """Function keys reachable from ``roots`` through :func:`callees` (roots first, source order)."""
    seen: list[str] = []
    todo = [r for r in roots if r in model.functions]
    while todo:
        key = todo.pop()
        if key in seen:
            continue
        seen.append(key)
        todo.extend(sorted(callees(model, key) - set(seen)))
    return seen


def launch_sites(model: ModuleModel, fn: FunctionNode) -> Iterator[tuple[str, ast.Call]]:
    """(kernel name, call) for each kernel launch inside ``fn``.

    A launch is ``jitfn[grid](...)``, ``cudakernel[grid, block](...)`` or ``ext.fn(...)`` on a
    ``load_inline`` module, where the kernel or module is one this module defines (directly, through
    an alias or container such as ``self.kernels[dtype]``, or returned by a factory function).
    """
    partials = _partial_launches(model, fn)
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in partials:  # launch = partial(kernel[grid], ...); launch(...)
            subscript, launched = partials[func.id]
            call = ast.copy_location(ast.Call(func=subscript, args=node.args, keywords=node.keywords), node)
            for name in launched:
                yield name, call
            continue
        if isinstance(func, ast.Subscript):
            kind, table = "launchable", model.launchables
        elif isinstance(func, ast.Attribute):
            kind, table = "extension", model.extensions
        else:
            continue
        owner = func.value
        names: tuple[str, ...] = table.get(binding_key(owner) or "", ())
        if not names and kind == "launchable":
            names = _row_kernels(model, fn, owner)
        if not names and isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) and \
                model.class_kernels.get(owner.attr) in module_bases(model, owner.value.id):  # fmt: skip
            names = table.get(f"self.{owner.attr}", ())  # ModelNew.KERNEL[grid](...): the class attribute's kernel
        if not names and isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name):
            factory = model.factories.get(owner.func.id)
            if factory is not None and factory[0] == kind:
                names = factory[1]
        if not names and kind == "launchable" and isinstance(owner, ast.Call) and owner.args:
            if resolve(owner.func, model.aliases) in WRAP_TRITON:  # torch.library.wrap_triton(kernel)[grid](...)
                names = model.launchables.get(binding_key(owner.args[0]) or "", ())
        for name in names:
            yield name, node


def _row_kernels(model: ModuleModel, fn: FunctionNode, owner: ast.expr) -> tuple[str, ...]:
    """The kernels a row table holds where ``owner`` reads it (:data:`ModuleModel.row_tables`): ``T[i][p]``, or a name
    bound only as position ``p`` of a ``for`` target over ``T`` (``for limit, k in T: k[grid](...)``)."""
    if isinstance(owner, ast.Subscript) and isinstance(owner.slice, ast.Constant) and \
            type(owner.slice.value) is int and isinstance(owner.value, ast.Subscript) and \
            isinstance(owner.value.value, ast.Name):  # fmt: skip
        return model.row_tables.get(owner.value.value.id, {}).get(owner.slice.value, ())
    if not isinstance(owner, ast.Name):
        return ()
    loops = [n for n in ast.walk(fn) if isinstance(n, ast.For | ast.AsyncFor) and isinstance(n.target, ast.Tuple)
             and isinstance(n.iter, ast.Name) and n.iter.id in model.row_tables
             and any(isinstance(e, ast.Name) and e.id == owner.id for e in n.target.elts)]  # fmt: skip
    bindings = [n for n in ast.walk(fn)
                if isinstance(n, ast.Name) and n.id == owner.id and not isinstance(n.ctx, ast.Load)]
    if len(loops) != 1 or len(bindings) != 1:
        return ()  # bound anywhere else in the function (or by two loops): not only a row's kernel
    loop = loops[0]
    assert isinstance(loop.target, ast.Tuple) and isinstance(loop.iter, ast.Name)
    position = next(k for k, e in enumerate(loop.target.elts) if isinstance(e, ast.Name) and e.id == owner.id)
    return model.row_tables[loop.iter.id].get(position, ())


def _partial_launches(model: ModuleModel, fn: FunctionNode) -> dict[str, tuple[ast.Subscript, tuple[str, ...]]]:
    """Locals bound once to ``functools.partial(kernel[grid], ...)``: calling one launches ``kernel`` on ``grid``
    (the launch site is the call, judged with that grid; binding the partial alone launches nothing)."""
    bound: dict[str, list[ast.AST]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.setdefault(node.id, []).append(model.parents.get(id(node), node))
    out: dict[str, tuple[ast.Subscript, tuple[str, ...]]] = {}
    for name, sites in bound.items():
        stmt = sites[0]
        if len(sites) != 1 or not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                                   and isinstance(stmt.targets[0], ast.Name)):  # fmt: skip
            continue
        value = stmt.value
        if not (isinstance(value, ast.Call) and resolve(value.func, model.aliases) == "functools.partial"
                and value.args and isinstance(value.args[0], ast.Subscript)):  # fmt: skip
            continue
        names = model.launchables.get(binding_key(value.args[0].value) or "", ())
        if names:
            out[name] = (value.args[0], names)
    return out


def _launched_params(fn: FunctionNode) -> dict[str, int]:
    """Parameters of ``fn`` that it launches (``kernel[grid](...)`` on a parameter) -> their position."""
    params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]]
    out: dict[str, int] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id in params:
                out[owner.id] = params.index(owner.id)
    return out


def passed_kernels(model: ModuleModel, path: list[str]) -> Iterator[str]:
    """Kernels the forward path hands to a launcher: ``launch(copy_kernel, x)`` with ``kernel[grid](...)``."""
    launchers = {key: _launched_params(model.functions[key]) for key in path if "." not in key}
    for key in path:
        for node in ast.walk(model.functions[key]):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            params = launchers.get(node.func.id) or {}
            for name, index in params.items():
                args = [kw.value for kw in node.keywords if kw.arg == name]
                args += node.args[index : index + 1] if index < len(node.args) else []
                for arg in args:
                    yield from model.launchables.get(binding_key(arg) or "", ())
