"""Code that never runs in the verifier, where rules about what running code does are not applied.

Kernel libraries carry code for other setups: a DTensor path, an optional ``weight``, distributed helpers,
version shims nobody calls. The verifier calls ``ModelNew.forward`` under ``torch.no_grad()`` on plain tensors,
so three kinds of code can never run there, and the checker knows which:

* **dead functions**: module-level functions and methods that no code which runs refers to. What runs is the
  module's own top-level code (class bodies, decorators, default values, annotations, Triton kernel bodies, which
  the interpreter runs as Python), the entry point, and whatever those refer to, transitively; any reference
  counts (a name handed on, stored or decorated may be called from anywhere), a class that is referred to makes
  all its methods live, and those it inherits from the module's own classes, a function under a decorator that is
  not known to be inert is live (the decorator may call or keep it). Two places name a class without making an
  instance or reaching a method: a type annotation (never called; kept at most in ``__annotations__``, which only
  refused dunder access and ``typing.get_type_hints`` read back) and the base list of a module-level class
  statement (deriving from a class runs none of its methods: ``__init_subclass__``, ``__class_getitem__`` and
  metaclass hooks are special methods a candidate may not define; a subclass that is live makes its bases live).
  fla's backend registry names its backend classes only so (``backend: type[BaseBackend]``, ``class
  TileLangBackend(BaseBackend)``) and instantiates one only in ``register``, which nothing running calls: their
  methods (a ``getattr(self, computed_name)``, a ``try`` around a registered verifier) never run. The
  ``backward`` of an ``autograd.Function`` is dead when the class is only used as ``Cls.apply(...)`` (or in
  ``isinstance``): the forward runs without autograd, and ``.backward()`` / ``torch.autograd.grad`` are refused on
  the forward path;
* **type-checking blocks**: the body of ``if TYPE_CHECKING:`` (``typing.TYPE_CHECKING`` is False at run time and
  only type checkers read the block; assigning it is refused as patching);
* **DTensor branches**: the body of ``if isinstance(x, DTensor)`` (and the ``else`` of ``if not isinstance``):
  no DTensor exists, since its constructors (``distribute_tensor``, ``DTensor.from_local``) are refused
  everywhere else and the verifier's inputs are plain tensors;
* **branches on a parameter that is always None**: ``if weight is not None:`` in a function that is only called
  directly, where every call passes ``None`` for ``weight`` (a literal, an omitted argument whose default is None,
  or a parameter of the caller that is always None itself), and ``weight`` is never rebound. Functions with
  decorators (which may change the arguments) and functions handed on as values are never assumed;
* **functions under a lazy wrapper nobody calls**: ``@torch.compile`` only wraps (it traces and compiles at the
  wrapper's first call, never at decoration), so a function under it is dead when nothing that runs refers to it,
  and so are its decorators, which then wrap a function nobody calls (the visitor exempts them only when their
  arguments are constants: a decorator's arguments run at definition).

Methods run without being named in three cases, so they are always live: every method of a class that has a class
decorator (it is handed the class and may call any of them), every method of an ``enum`` class or a class with a
``metaclass=`` keyword, or of one deriving from such a class of the module (the class statement makes each member
and calls its ``__init__``; a metaclass may call anything), and sunder hooks (``_missing_``,
``_generate_next_value_``) that a library calls by name.

Which rules are lifted there is the visitor's decision (``evaluator.static_visitor``).
"""

from __future__ import annotations

import ast
import functools
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from evaluator.static_library import custom_op_key
from evaluator.static_model import AUTOGRAD_FUNCTION, ModuleModel, module_bases, resolve, scope_bindings
from evaluator.static_paths import made_at_definition
from evaluator.static_probes import is_constant
from evaluator.static_rules import AMP_DECORATORS, COMPILER_OPT_OUTS
from evaluator.static_unread import deferred_bindings
from evaluator.static_uses import Use, binding_counts, binding_sites, in_inert_annotation, main_guard, use_of
from evaluator.static_wrappers import hands_first_only, transparent

Resolve = Callable[[ast.AST], "str | None"]
DTENSOR = frozenset({"torch.distributed.tensor.DTensor", "torch.distributed.tensor._api.DTensor"})
TYPE_CHECKING = "typing.TYPE_CHECKING"
# What a literal constant never is: ``isinstance(offsets, torch.Tensor)`` is false where offsets is always 0.
TENSOR_TYPES = frozenset({"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"})
# Decorators that only wrap a function and call it when it is called (so they do not make it run).
INERT_DECORATORS = frozenset({"functools.cache", "functools.lru_cache", "staticmethod", "classmethod", "property",
                              "contextlib.contextmanager", "torch.autograd.function.once_differentiable",
                              "triton.testing.perf_report"}) | AMP_DECORATORS  # fmt: skip
# Not typing.overload: it keeps the function in a registry that typing.get_overloads reads back by name.
# torch.compile only wraps: it traces and compiles at the wrapper's first call, never at decoration.
INERT_DECORATORS |= COMPILER_OPT_OUTS | {"torch.compile"}
_FUNCTION = (ast.FunctionDef, ast.AsyncFunctionDef)


def inert_decorators(node: ast.FunctionDef | ast.AsyncFunctionDef, model: ModuleModel) -> bool:
    """Every decorator only wraps the function: a known wrapper (builtins such as ``staticmethod`` are read by
    their name) or one of the module's own wrapper factories (:func:`pure_wrapper`)."""
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = resolve(target, model.aliases) or (target.id if isinstance(target, ast.Name) else "")
        if name in INERT_DECORATORS:
            continue
        if isinstance(dec, ast.Name) and pure_wrapper(model.functions.get(dec.id), model):
            continue
        if isinstance(dec, ast.Name) and transparent(dec, model):  # calls it only from a wrapper it returns
            continue
        return False
    return True


def pure_wrapper(fn: ast.AST | None, model: ModuleModel) -> bool:
    """``def deco(fn): @functools.wraps(fn) def wrapper(*a, **k): ... fn(...) ...; return wrapper``: a decorator
    that defines and returns wrappers and otherwise only hands ``fn`` to ``functools.wraps`` -- it neither calls
    ``fn`` when it decorates nor keeps it anywhere else (Liger's ``ensure_contiguous``)."""
    if not isinstance(fn, ast.FunctionDef) or fn.decorator_list or fn.args.defaults or fn.args.vararg:
        return False
    params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
    if len(params) != 1 or fn.args.kwonlyargs or fn.args.kwarg:
        return False
    wrapped, wrappers = params[0], set()
    for stmt in fn.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        if isinstance(stmt, _FUNCTION):
            for dec in stmt.decorator_list:
                ok = (isinstance(dec, ast.Call) and resolve(dec.func, model.aliases) == "functools.wraps"
                      and len(dec.args) == 1 and not dec.keywords)  # fmt: skip
                if not ok:
                    return False
            if any(isinstance(n, ast.Name) and n.id == wrapped for part in _signature_parts(stmt, decorators=False)
                   for n in ast.walk(part)):  # fmt: skip
                return False
            wrappers.add(stmt.name)
            continue
        if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Name) and stmt.value.id in wrappers:
            continue
        return False
    stores = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == wrapped and not isinstance(n.ctx,
                                                                                                        ast.Load)]
    return bool(wrappers) and not stores


def _signature_parts(fn: ast.FunctionDef | ast.AsyncFunctionDef, *, decorators: bool = True) -> Iterator[ast.AST]:
    """What a ``def`` statement evaluates when it runs: decorators, defaults and annotations."""
    if decorators:
        yield from fn.decorator_list
    yield from fn.args.defaults
    yield from (d for d in fn.args.kw_defaults if d is not None)
    for arg in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs, fn.args.vararg, fn.args.kwarg]:
        if arg is not None and arg.annotation is not None:
            yield arg.annotation
    if fn.returns is not None:
        yield fn.returns


# What a forward may do with ``ctx`` and still run no backward: keep tensors and flags for it. The node ``ctx``
# is (torch's BackwardCFunction) also has ``apply``, which runs the Function's backward right there.
_CTX_CALLS = frozenset({"save_for_backward", "save_for_forward", "mark_non_differentiable", "mark_dirty",
                        "set_materialize_grads"})
_CTX_READS = frozenset({"needs_input_grad"})
_CTX_RUNS = frozenset({"apply", "apply_jvp"})  # the node's own methods: they run the backward (or jvp)
# Ways to the graph node ctx is from outside the forward: an output's grad_fn, a node's next_functions.
GRAPH_NODES = frozenset({"grad_fn", "next_functions"})


def names_graph_node(tree: ast.Module) -> bool:
    """The file names a graph node's attribute anywhere: as an attribute, a class pattern's keyword
    (``case torch.Tensor(grad_fn=node)``) or inside any string (``getattr(y, "grad_fn")``,
    ``operator.attrgetter("grad_fn")``; computed names are refused elsewhere)."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and n.attr in GRAPH_NODES:
            return True
        if isinstance(n, ast.MatchClass) and GRAPH_NODES & set(n.kwd_attrs):
            return True
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and any(g in n.value for g in GRAPH_NODES):
            return True
    return False


def plain_function_class(model: ModuleModel, cls: str) -> bool:
    """``cls`` derives from ``torch.autograd.Function`` alone (no class decorator, no keyword, no other base: a
    base of the file's could define ``apply`` first in the lookup), and its body binds ``forward``,
    ``setup_context`` and ``backward`` only by defs, and no other member of ``torch.autograd.Function`` or special
    name (``apply = classmethod(...)``, ``setup_context = staticmethod(other)``): what torch calls is then what the
    checker judges."""
    node = model.classes.get(cls)
    if not isinstance(node, ast.ClassDef) or node.decorator_list or node.keywords or len(node.bases) != 1:
        return False
    if resolve(node.bases[0], model.aliases) != AUTOGRAD_FUNCTION:
        return False
    for name, site in scope_bindings(node):
        if name in ("forward", "setup_context", "backward"):
            if not isinstance(site, _FUNCTION):
                return False
        elif name in _function_members() or name.startswith("__"):
            return False
    return True


@functools.cache
def _function_members() -> frozenset[str]:
    """Every attribute ``torch.autograd.Function`` has (``apply``, ``vjp``, ``mark_dirty``, ...)."""
    import torch

    return frozenset(dir(torch.autograd.Function))


def ctx_kept_to_itself(model: ModuleModel, cls: str) -> bool:
    """The ``ctx`` of ``cls.forward`` (and ``cls.setup_context``) is only handed things: attributes stored on it
    (plain names), the calls in :data:`_CTX_CALLS`, and reads of ``needs_input_grad`` or of an attribute the
    class's own methods store. Anything else -- ``ctx.apply(...)``, ``ctx`` passed on, captured or rebound --
    may reach the backward while the forward runs."""
    stored: set[str] = set()
    uses: list[ast.Name] = []
    for method in ("forward", "setup_context"):
        fn = model.functions.get(f"{cls}.{method}")
        if fn is None and method == "setup_context":
            continue
        if not isinstance(fn, _FUNCTION) or not _hands_ctx_on(fn, model):
            return False  # a classmethod's ctx is its second parameter; other decorators may hand it anywhere
        params = [*fn.args.posonlyargs, *fn.args.args]
        if not params:
            return False
        # forward's first parameter is judged as ctx even where a setup_context takes ctx (a class body may
        # delete that def, and torch then hands forward the ctx): an input used as a tensor keeps the backward live
        name = params[0].arg
        uses += [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name]
    for n in uses:
        up = model.parents.get(id(n))
        if isinstance(up, ast.Attribute) and isinstance(up.ctx, ast.Store) and not up.attr.startswith("_"):
            stored.add(up.attr)
    for n in uses:
        up = model.parents.get(id(n))
        if not isinstance(n.ctx, ast.Load) or not isinstance(up, ast.Attribute) or up.attr.startswith("_"):
            return False
        if isinstance(up.ctx, ast.Store):
            continue
        call = model.parents.get(id(up))
        if up.attr in _CTX_CALLS and isinstance(call, ast.Call) and call.func is up:
            continue
        if up.attr in _CTX_READS or (up.attr in stored and up.attr not in _CTX_CALLS | _CTX_RUNS):
            continue
        return False
    return True


def _hands_ctx_on(fn: ast.FunctionDef | ast.AsyncFunctionDef, model: ModuleModel) -> bool:
    """``fn`` is a ``@staticmethod`` whose other decorators hand its first argument (ctx) straight to it: torch's
    AMP decorators, or one of the file's wrapper factories whose wrappers take ctx as their first parameter and
    use it only as the first argument of the wrapped function (Liger's ``ensure_contiguous``)."""
    targets = [d.func if isinstance(d, ast.Call) else d for d in fn.decorator_list]  # @custom_fwd(device_type=...)
    names = [resolve(t, model.aliases) or (t.id if isinstance(t, ast.Name) else "") for t in targets]
    if "staticmethod" not in names:
        return False
    for dec, name in zip(fn.decorator_list, names, strict=True):
        if name == "staticmethod" or (name in AMP_DECORATORS and _amp_applied_plainly(dec)) or (
                isinstance(dec, ast.Name) and _amp_name(dec.id, model)):
            continue
        if hands_first_only(dec, model):  # fla's input_guard: ctx reaches only the forward
            continue
        once = isinstance(dec, ast.Name) and model.binding_counts.get(dec.id) == 1  # the def judged is the one used
        factory = model.functions.get(dec.id) if once and isinstance(dec, ast.Name) else None
        if not (isinstance(factory, _FUNCTION) and pure_wrapper(factory, model) and _passes_first(factory, model)):
            return False
    return True


def _amp_applied_plainly(dec: ast.expr) -> bool:
    """``@custom_fwd`` or ``@custom_fwd(device_type=..., cast_inputs=...)``: handed the function to wrap
    (``custom_fwd(other)``, ``fwd=``), it would return that one wrapped instead."""
    return not isinstance(dec, ast.Call) or (not dec.args and all(k.arg in ("device_type", "cast_inputs")
                                                                  for k in dec.keywords))


def _amp_value(node: ast.AST, model: ModuleModel) -> bool:
    """``node`` is one of torch's AMP decorators, or ``functools.partial`` of one."""
    if isinstance(node, ast.Call) and resolve(node.func, model.aliases) == "functools.partial" and node.args:
        if len(node.args) > 1 or not _amp_applied_plainly(ast.Call(func=node.args[0], args=[], keywords=node.keywords)):
            return False  # partial(custom_fwd, other) wraps other
        node = node.args[0]
    return resolve(node, model.aliases) in AMP_DECORATORS


def _amp_name(name: str, model: ModuleModel) -> bool:
    """A module-level name bound once, to an AMP decorator: ``fwd = torch.amp.custom_fwd``, or an element of what a
    function of the file returns in every ``return`` (Liger's ``amp_custom_fwd, amp_custom_bwd =
    get_amp_custom_fwd_bwd()``, each return a tuple of AMP decorators or partials of them)."""
    if model.binding_counts.get(name) != 1:
        return False
    for stmt in model.module_assigns:
        for target in stmt.targets:
            if isinstance(target, ast.Name) and target.id == name:
                return _amp_value(stmt.value, model)
            names = [getattr(e, "id", None) for e in target.elts] if isinstance(target, ast.Tuple) else []
            if name not in names:
                continue
            index = names.index(name)
            maker = model.functions.get(stmt.value.func.id) if isinstance(stmt.value, ast.Call) and isinstance(
                stmt.value.func, ast.Name) and not stmt.value.args and not stmt.value.keywords and \
                model.binding_counts.get(stmt.value.func.id) == 1 else None
            if not isinstance(maker, ast.FunctionDef) or maker.decorator_list or any(
                    isinstance(n, ast.Yield | ast.YieldFrom | ast.Await) for n in ast.walk(maker)):
                return False  # a generator's call hands out what it yields, not what it returns
            returns = [n for n in ast.walk(maker) if isinstance(n, ast.Return)]
            return bool(returns) and all(isinstance(r.value, ast.Tuple) and len(r.value.elts) == len(names)
                                         and _amp_value(r.value.elts[index], model) for r in returns)
    return False


def _passes_first(factory: ast.FunctionDef | ast.AsyncFunctionDef, model: ModuleModel) -> bool:
    """Every wrapper ``factory`` returns uses its first parameter only as the first argument of a call of the
    function ``factory`` wraps."""
    wrapped = factory.args.args[0].arg
    for wrapper in (s for s in factory.body if isinstance(s, _FUNCTION)):
        params = [*wrapper.args.posonlyargs, *wrapper.args.args]
        if not params or binding_counts(ast.Module(body=[wrapper], type_ignores=[])).get(wrapped):
            return False  # the wrapper rebinds the wrapped function's name (a parameter, a store, its own name)
        first = params[0].arg
        for n in ast.walk(wrapper):
            if isinstance(n, ast.Name) and n.id == first:
                call = model.parents.get(id(n))
                if not (isinstance(n.ctx, ast.Load) and isinstance(call, ast.Call) and call.args
                        and call.args[0] is n and isinstance(call.func, ast.Name) and call.func.id == wrapped):
                    return False
            elif isinstance(n, ast.arg) and n.arg == first and n is not params[0]:
                return False  # a nested function's parameter of the same name
    return True


class _Liveness:
    def __init__(self, tree: ast.Module, model: ModuleModel, entry: str,
                 facts: dict[str, Known] | None = None) -> None:  # fmt: skip
        self.tree, self.model = tree, model
        self.facts = facts  # with these, what a function refers to only in branches that never run is not reached
        self.live: set[str] = set()
        self.todo: list[str] = []
        self._backward_dead: dict[str, bool] = {}
        self._graph_named: bool | None = None  # names_graph_node(tree), asked once
        # module-level tables read only if running code reads their name (evaluator.static_unread)
        self.deferred = deferred_bindings(tree, model, entry)
        self._deferred_ids = {id(stmt) for stmt in self.deferred.values()}
        self.read: set[str] = set()

    def mark(self, key: str) -> None:
        if key in self.model.functions and key not in self.live:
            self.live.add(key)
            self.todo.append(key)

    def mark_class(self, cls: str) -> None:
        for owner in module_bases(self.model, cls):  # an instance runs the methods it inherits too
            for key in [k for k in self.model.functions if k.startswith(owner + ".")]:
                if owner in self.model.autograd_functions and key == f"{owner}.backward" and self.backward_dead(owner):
                    continue
                self.mark(key)

    def backward_dead(self, cls: str) -> bool:
        """Every use of the autograd Function ``cls`` is ``cls.apply`` or an isinstance check, its forward (or
        setup_context) uses ``ctx`` only to keep things for a backward (:func:`ctx_kept_to_itself`), and no code in
        the file reaches a graph node another way (``y.grad_fn.apply(...)`` runs the backward as ``ctx.apply``)."""
        if cls not in self._backward_dead:
            parents = self.model.parents
            if self._graph_named is None:
                self._graph_named = names_graph_node(self.tree)
            dead = plain_function_class(self.model, cls) and ctx_kept_to_itself(self.model, cls) and \
                not self._graph_named
            for n in ast.walk(self.tree) if dead else ():
                if isinstance(n, ast.Name) and n.id == cls and isinstance(n.ctx, ast.Load):
                    up = parents.get(id(n))
                    if isinstance(up, ast.Attribute) and up.attr == "apply" and isinstance(up.ctx, ast.Load):
                        continue
                    if use_of(n, parents) is Use.TYPE_CHECK:
                        continue
                    dead = False
                    break
            self._backward_dead[cls] = dead
        return self._backward_dead[cls]

    def refs(self, node: ast.AST) -> None:
        """Mark everything ``node`` refers to as live."""
        model = self.model
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                if n.id in self.deferred and n.id not in self.read:
                    self.read.add(n.id)
                    self.refs(self.deferred[n.id].value)  # running code reads the table: what it names is live
                if n.id in model.functions:
                    self.mark(n.id)
                elif n.id in model.classes and not in_inert_annotation(n, model.parents):
                    self.mark_class(n.id)
                instance = model.instances.get(n.id, "")
                if instance.startswith("class:"):
                    self.mark_class(instance[6:])
            elif isinstance(n, ast.Attribute):
                if isinstance(n.value, ast.Name) and n.value.id in model.classes:
                    self.mark(f"{n.value.id}.{n.attr}")  # Cls.backward(...) called directly
                op = custom_op_key(resolve(n, model.aliases) or "") if model.custom_ops else None
                function = model.custom_ops[op].function if op is not None and op in model.custom_ops else None
                if function:
                    self.mark(function)

    def top_level(self, entry: str) -> None:
        model = self.model
        for stmt in self.tree.body:
            if isinstance(stmt, _FUNCTION) and (model.functions.get(stmt.name) is stmt
                                                or model.jit_kernels.get(stmt.name) is stmt):  # fmt: skip
                for part in _signature_parts(stmt):
                    self.refs(part)
                if model.jit_kernels.get(stmt.name) is stmt:
                    self.refs(stmt)  # the interpreter runs a kernel's body as Python
                elif not inert_decorators(stmt, model) or stmt.name == entry:
                    self.mark(stmt.name)
            elif isinstance(stmt, ast.ClassDef) and model.classes.get(stmt.name) is stmt:
                for part in [*stmt.decorator_list, *(k.value for k in stmt.keywords)]:
                    self.refs(part)
                for base in stmt.bases:  # a base's methods are live with a live subclass (mark_class)
                    if not (isinstance(base, ast.Name) and base.id in model.classes):
                        self.refs(base)
                for item in stmt.body:
                    key = f"{stmt.name}.{getattr(item, 'name', '')}"
                    if isinstance(item, _FUNCTION) and model.functions.get(key) is item:
                        for part in _signature_parts(item):
                            self.refs(part)
                        if not inert_decorators(item, model) or stmt.decorator_list or _hook_name(item.name) \
                                or made_at_definition(model, stmt.name):
                            self.mark(key)  # a class decorator gets the class (and may call any method of it)
                    else:
                        self.refs(item)
                if stmt.name == entry:
                    for owner in module_bases(model, entry):  # and the file's classes it derives from
                        for key in [k for k in model.functions if k.startswith(owner + ".")]:
                            self.mark(key)  # the harness builds and calls the entry point
            elif isinstance(stmt, ast.If) and main_guard(stmt, self.tree, model.parents):
                for part in [stmt.test, *stmt.orelse]:  # its body never runs here; an `else:` does
                    self.refs(part)
            elif id(stmt) not in self._deferred_ids:
                self.refs(stmt)

    def run(self, entry: str, roots: Iterable[str] = ()) -> set[str]:
        self.top_level(entry)
        for key in roots:  # functions known to run otherwise (the forward path)
            self.mark(key)
        while self.todo:
            for part in self._running(self.todo.pop()):
                self.refs(part)
        return self.live

    def _running(self, key: str) -> list[ast.AST]:
        """A function's code, less the branches that never run given what its parameters and flags always are
        (:class:`Known`): each such ``if`` (or ``x if c else y``) keeps its test and the side that may run. A name
        read in a test that the function (or the module) binds otherwise is not trusted: ``torch`` in
        ``isinstance(offsets, torch.Tensor)`` must be the import."""
        fn = self.model.functions[key]
        if self.facts is None or not isinstance(fn, _FUNCTION) or key not in self.facts:
            return [fn]
        bound = {name for name, _ in binding_sites(fn)}

        def trusted(node: ast.AST) -> str | None:
            root = node
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and (root.id in bound or self.model.binding_counts.get(root.id, 0) > 1):
                return None
            return resolve(node, self.model.aliases)

        branches = Branches(trusted, local_flags(fn, self.facts[key], trusted))
        kept: list[ast.AST] = [*fn.decorator_list, *_signature_parts(fn, decorators=False)]
        todo: list[ast.AST] = list(fn.body)
        while todo:
            node = todo.pop()
            if isinstance(node, ast.If | ast.IfExp):
                kept.append(node.test)
                body = node.body if isinstance(node.body, list) else [node.body]
                orelse = node.orelse if isinstance(node.orelse, list) else [node.orelse]
                todo += [] if branches.never_true(node.test) else body
                todo += [] if branches.always_true(node.test) else orelse
            elif isinstance(node, (*_FUNCTION, ast.Lambda, ast.ClassDef)) or not any(
                    isinstance(n, ast.If | ast.IfExp) for n in ast.walk(node)):
                kept.append(node)  # no branch inside (or a nested scope, judged as a whole)
            else:
                todo.extend(ast.iter_child_nodes(node))
        return kept


def _hook_name(name: str) -> bool:
    """``_missing_``, ``_generate_next_value_``: a library calls a method of this (sunder) form by its name, on its
    own (Enum's value lookup and ``auto()``), so it runs although no code names it."""
    return len(name) > 2 and name.startswith("_") and name.endswith("_") and not name.startswith("__")


def liveness(tree: ast.Module, model: ModuleModel, entry: str, roots: Iterable[str] = (),
             facts: dict[str, Known] | None = None) -> tuple[set[str], set[int]]:  # fmt: skip
    """One walk for both answers: the keys of the module-level functions and methods that code which runs can reach
    (module docstring), and the ids of the module-level bindings no running code reads (evaluator.static_unread);
    ``roots`` are functions known to run otherwise (the forward path). With ``facts`` (:func:`parameter_facts`),
    what a function refers to only in branches that never run given them is not reached from it."""
    walk = _Liveness(tree, model, entry, facts)
    live = walk.run(entry, roots)
    return live, {id(stmt) for name, stmt in walk.deferred.items() if name not in walk.read}


def none_reached(tree: ast.Module, model: ModuleModel, entry: str, roots: Iterable[str],
                 facts: dict[str, Known]) -> set[str]:  # fmt: skip
    """The functions code that runs reaches from ``roots`` only through branches that never run given ``facts``
    (fla's varlen index helpers, called only under ``if cu_seqlens is not None``)."""
    if not any(facts.values()):
        return set()  # nothing known: no branch is dead by it (most candidates; two walks saved)
    return liveness(tree, model, entry, roots)[0] - liveness(tree, model, entry, roots, facts)[0]


def live_functions(tree: ast.Module, model: ModuleModel, entry: str, roots: Iterable[str] = ()) -> set[str]:
    """Keys of the functions and methods that code which runs can reach (:func:`liveness`)."""
    return liveness(tree, model, entry, roots)[0]


def unread_bindings(tree: ast.Module, model: ModuleModel, entry: str, roots: Iterable[str] = ()) -> set[int]:
    """ids of the module-level bindings no running code reads (:func:`liveness`)."""
    return liveness(tree, model, entry, roots)[1]


# -- parameters every caller passes as None -------------------------------------------------------------------

class _Target:
    """A function whose callers the checker can all see: its parameters and how calls map onto them."""

    def __init__(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, offset: int, parents: dict[int, ast.AST]) -> None:
        self.fn = fn
        positional = [*fn.args.posonlyargs, *fn.args.args][offset:]
        self.positional = [a.arg for a in positional]
        self.kwonly = [a.arg for a in fn.args.kwonlyargs]
        defaults: dict[str, ast.expr | None] = {a: None for a in [*self.positional, *self.kwonly]}
        for a, d in zip(reversed(positional), reversed(fn.args.defaults), strict=False):
            defaults[a.arg] = d
        for a, kw_default in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True):
            defaults[a.arg] = kw_default
        self.defaults = defaults
        own = {id(a) for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs, fn.args.vararg,
                               fn.args.kwarg] if a is not None}  # fmt: skip
        sites = [(name, n) for name, n in binding_sites(fn) if n is not fn and id(n) not in own]
        declared = {name for n in ast.walk(fn) if isinstance(n, ast.Global | ast.Nonlocal) for name in n.names}
        rebound = {name for name, n in sites
                   if not (isinstance(n, ast.Name) and _under_none_test(n, name, fn, parents))}
        self.params = {p for p in defaults if p not in rebound | declared}  # None where None was passed
        self.unbound = {p for p in defaults if p not in {name for name, _ in sites} | declared}  # never rebound

    def argument(self, call: ast.Call, param: str) -> ast.expr | str:
        """The expression passed for ``param`` (``"default"`` when omitted, ``"unknown"`` for */** calls)."""
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return "unknown"
        for kw in call.keywords:
            if kw.arg == param:
                return kw.value
        if param in self.positional and self.positional.index(param) < len(call.args):
            return call.args[self.positional.index(param)]
        return "default"


def _under_none_test(node: ast.AST, name: str, fn: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """``node`` stands in a branch that runs only when ``name`` is not None (``if weight is not None: weight =
    weight.contiguous()``): a rebinding there does not make ``name`` anything but None where it is None."""
    branches = Branches(lambda _n: None, Known(none=frozenset({name})))
    child, parent = node, parents.get(id(node))
    while parent is not None and parent is not fn:
        if isinstance(parent, ast.If | ast.IfExp) and child is not parent.test:
            in_body = child in parent.body if isinstance(parent, ast.If) else child is parent.body
            if (in_body and branches.never_true(parent.test)) or (not in_body and branches.always_true(parent.test)):
                return True
        child, parent = parent, parents.get(id(parent))
    return False


def _targets(tree: ast.Module, model: ModuleModel, entry: str) -> dict[str, _Target]:
    out: dict[str, _Target] = {}
    for key, fn in model.functions.items():
        if not isinstance(fn, _FUNCTION) or key == entry:
            continue  # the entry point is called by the harness, with the task's inputs
        # a decorator is assumed only when it hands the function the arguments its wrapper got (static_wrappers)
        if "." not in key and all(transparent(d, model) for d in fn.decorator_list):
            out[key] = _Target(fn, 0, model.parents)
        elif key.endswith(".forward") and key.split(".")[0] in model.autograd_functions:
            if any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list) and \
                    all(transparent(d, model) for d in fn.decorator_list) and \
                    not _ctx_free_forward(tree, model, key.split(".")[0]):
                out[key] = _Target(fn, 1, model.parents)  # forward(ctx, *args): Cls.apply(*args)
    return out


def _ctx_free_forward(tree: ast.Module, model: ModuleModel, cls: str) -> bool:
    """The Function's ``forward`` may take no ``ctx`` (``apply``'s arguments map onto its parameters from the first):
    the class or one of the module's classes it derives from binds ``setup_context`` in its body, or the file sets
    that attribute anywhere (torch calls ``forward`` without ``ctx`` whenever ``setup_context`` is overridden)."""
    for owner in module_bases(model, cls):
        node = model.classes.get(owner)
        if isinstance(node, ast.ClassDef) and any(name == "setup_context" for stmt in node.body
                                                  for name, _n in binding_sites(stmt)):  # fmt: skip
            return True
    return any(isinstance(n, ast.Attribute) and n.attr == "setup_context" and not isinstance(n.ctx, ast.Load)
               for n in ast.walk(tree))


def _call_sites(tree: ast.Module, model: ModuleModel, targets: dict[str, _Target]
                ) -> tuple[list[tuple[str, ast.Call, str | None]], set[str]]:  # fmt: skip
    """(target key, call, enclosing function key) for every call of a target; and targets used other ways."""
    parents = model.parents
    escaped: set[str] = set()
    sites: list[tuple[str, ast.Call, str | None]] = []
    for n in ast.walk(tree):
        if not (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)):
            continue
        up = parents.get(id(n))
        if n.id in targets:
            if isinstance(up, ast.Call) and up.func is n:
                sites.append((n.id, up, None))
            else:
                escaped.add(n.id)
        key = f"{n.id}.forward"
        if key in targets:
            call = parents.get(id(up)) if isinstance(up, ast.Attribute) and up.attr == "apply" else None
            if isinstance(call, ast.Call) and call.func is up:
                sites.append((key, call, None))
            elif use_of(n, parents) is not Use.TYPE_CHECK:
                escaped.add(key)
    enclosing: dict[int, str] = {}
    for key, fn in model.functions.items():
        todo: list[ast.AST] = list(ast.iter_child_nodes(fn))
        while todo:  # the function's own scope; calls inside nested defs and lambdas stay unknown
            node = todo.pop()
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
                continue
            if isinstance(node, ast.Call):
                enclosing[id(node)] = key
            todo.extend(ast.iter_child_nodes(node))
    return [(k, c, enclosing.get(id(c))) for k, c, _ in sites], escaped


def parameter_facts(tree: ast.Module, model: ModuleModel, entry: str,
                    live: set[str] | None = None) -> dict[str, Known]:  # fmt: skip
    """Function key -> its parameters that are None at every call, and those that are a literal constant at every
    call (module docstring): the largest sets consistent with every call site, a caller's own such parameter
    handed on counting as one. With ``live`` (:func:`liveness`), calls inside module-level functions and methods
    nothing running refers to are left out: they never run."""
    targets = _targets(tree, model, entry)
    sites, escaped = _call_sites(tree, model, targets)
    if live is not None:
        owners = {id(fn): key for key, fn in model.functions.items()}
        sites = [site for site in sites if _owner(site[1], model.parents, owners) in live | {None}]
    facts = {"none": {k: set(t.params) for k, t in targets.items() if k not in escaped},
             "constant": {k: set(t.unbound) for k, t in targets.items() if k not in escaped}}

    def holds(kind: str, value: ast.expr | str, target: _Target, param: str, where: str | None) -> bool:
        if value == "default":  # evaluated where the def stands: only a literal says what it is
            default = target.defaults.get(param)
            return (default is not None and is_constant(default) if kind == "constant" else
                    isinstance(default, ast.Constant) and default.value is None)  # fmt: skip
        if isinstance(value, str):
            return False
        if kind == "none" and isinstance(value, ast.Constant):
            return value.value is None
        if kind == "constant" and is_constant(value):
            return True
        return isinstance(value, ast.Name) and where is not None and value.id in facts[kind].get(where, ())

    changed = True
    while changed:  # the largest sets consistent with every call site
        changed = False
        for kind, sets in facts.items():
            for key, call, where in sites:
                for param in list(sets.get(key, ())):
                    if not holds(kind, targets[key].argument(call, param), targets[key], param, where):
                        sets[key].discard(param)
                        changed = True
    known = {k for kind in facts.values() for k, v in kind.items() if v}
    return {k: Known(none=frozenset(facts["none"][k]), constant=frozenset(facts["constant"][k])) for k in known}


def _owner(node: ast.AST, parents: dict[int, ast.AST], keys: dict[int, str]) -> str | None:
    """The key of the outermost module-level function or method whose body holds ``node`` (None at module level):
    a def's decorators, defaults and annotations run where the def stands, not when the function runs."""
    owner = None
    child, up = node, parents.get(id(node))
    while up is not None:
        if id(up) in keys and isinstance(up, _FUNCTION) and any(child is stmt for stmt in up.body):
            owner = keys[id(up)]
        elif id(up) in keys and isinstance(up, _FUNCTION):
            owner = None  # in its signature: whatever encloses the def decides
        child, up = up, parents.get(id(up))
    return owner


def none_parameters(tree: ast.Module, model: ModuleModel, entry: str) -> dict[str, frozenset[str]]:
    """Function key -> its parameters that are None at every call (:func:`parameter_facts`)."""
    return {k: f.none for k, f in parameter_facts(tree, model, entry).items() if f.none}


def local_flags(fn: ast.FunctionDef | ast.AsyncFunctionDef, known: Known, resolve: Resolve) -> Known:
    """``known`` and the locals of ``fn`` that a top-level statement of its body binds, once in the whole function
    (nested scopes included), to a test that is never or always true given what is known before it (``is_varlen =
    cu_seqlens is not None`` where cu_seqlens is always None): every read of such a name is that value, or raises
    before the binding."""
    if not known:
        return known
    counts = Counter(name for name, _node in binding_sites(fn))
    declared = {name for n in ast.walk(fn) if isinstance(n, ast.Global | ast.Nonlocal) for name in n.names}
    false, true = set(known.false), set(known.true)
    for stmt in fn.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            continue
        name = stmt.targets[0].id
        if counts.get(name) != 1 or name in declared:
            continue
        branches = Branches(resolve, Known(known.none, known.constant, frozenset(false), frozenset(true)))
        if branches.never_true(stmt.value):
            false.add(name)
        elif branches.always_true(stmt.value):
            true.add(name)
    return Known(known.none, known.constant, frozenset(false), frozenset(true))


# -- tests that are never (or always) true in the verifier ---------------------------------------------------

@dataclass(frozen=True)
class Known:
    """What is fixed where a function runs in the verifier: its parameters every call passes as None, those every
    call passes a literal constant (None, a number, a string: never a tensor), and its locals bound once, in its own
    body's top-level statements, to a test that is never (``false``) or always (``true``) true there (``is_varlen =
    cu_seqlens is not None``)."""

    none: frozenset[str] = frozenset()
    constant: frozenset[str] = frozenset()
    false: frozenset[str] = frozenset()
    true: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.none or self.constant or self.false or self.true)


class Branches:
    """Which side of an ``if`` never runs, given what is fixed where it stands (:class:`Known`; and, from the
    visitor, ``absent``: a test that is false wherever the candidate runs, evaluator.static_absent)."""

    def __init__(self, resolve: Resolve, known: Known = Known(),
                 absent: Callable[[ast.AST], bool] | None = None) -> None:  # fmt: skip
        self.resolve, self.known, self.none = resolve, known, known.none
        self.absent = absent or (lambda _test: False)

    def _constant_name(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id in self.known.constant

    def _type_in(self, node: ast.AST, names: frozenset[str]) -> bool:
        """``node`` names one of ``names`` (a tuple: each of its items does)."""
        if isinstance(node, ast.Tuple):
            return bool(node.elts) and all(self._type_in(e, names) for e in node.elts)
        return self.resolve(node) in names

    def _none_name(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id in self.none

    def never_true(self, test: ast.AST) -> bool:
        if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance":
            if len(test.args) != 2 or test.keywords:
                return False
            # no DTensor exists in the verifier; a literal constant is never a tensor
            return self._type_in(test.args[1], DTENSOR) or (self._constant_name(test.args[0])
                                                            and self._type_in(test.args[1], TENSOR_TYPES))  # fmt: skip
        if isinstance(test, ast.Call) and self.resolve(test.func) == "torch.is_tensor":
            return len(test.args) == 1 and not test.keywords and self._constant_name(test.args[0])
        if isinstance(test, ast.Name) and test.id in self.known.false:
            return True
        if self._none_name(test) or self.absent(test) or self.resolve(test) == TYPE_CHECKING:
            return True  # typing.TYPE_CHECKING is False when the program runs (patching it is refused)
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and self._none_name(test.left):
            right = test.comparators[0]
            return isinstance(right, ast.Constant) and right.value is None and isinstance(test.ops[0],
                                                                                          ast.IsNot | ast.NotEq)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.always_true(test.operand)
        if isinstance(test, ast.BoolOp):
            found = [self.never_true(v) for v in test.values]
            return any(found) if isinstance(test.op, ast.And) else all(found)
        return False

    def always_true(self, test: ast.AST) -> bool:
        if isinstance(test, ast.Name) and test.id in self.known.true:
            return True
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and self._none_name(test.left):
            right = test.comparators[0]
            return isinstance(right, ast.Constant) and right.value is None and isinstance(test.ops[0], ast.Is | ast.Eq)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.never_true(test.operand)
        if isinstance(test, ast.BoolOp):
            found = [self.always_true(v) for v in test.values]
            return all(found) if isinstance(test.op, ast.And) else any(found)
        return False
