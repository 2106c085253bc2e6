"""State a candidate keeps across calls and updates from its own earlier value: a count of calls.

A kernel that is right for its first K calls and wrong afterwards (``self.calls += 1`` and ``eps`` dropped from
call 5001 on) passes every verifier process that makes fewer than K calls, and the verifier's processes make a few
hundred at most; any fixed number is outlasted by a larger K. What every such latch needs is state that survives a
call and is computed from its own earlier value: a counter, an accumulator, a container that grows or is used up,
an iterator moved on, a cached function's hit count. Honest kernels keep state too, but as caches: a buffer made
once, a launch configuration or a compiled kernel keyed by a shape, a warn-once flag, the largest size seen, each
written from the call's arguments and constants, never computed from what it held before.

Reported in the functions forward can run (those the checker's path reaches, and every closure, wherever defined: a
factory's closure is called through a name no call graph follows), never in ``__init__`` or in module-level code
that runs once (``nn.ModuleList().append`` while building, a registry's decorator):

* an augmented assignment (``+=``, ``|=``, ...) to state that outlives the call: an attribute (``self.n``,
  ``Cls.n``), an item of a container that is not a fresh local (``self.d[k]``, ``COUNTS[0]``, a mutable default
  argument's, a caller's state handed in), a ``global``/``nonlocal`` name, a closure's variable; ``+=``/``|=`` of
  a container on a local that holds such state (``log = self.log; log += [0]``);
* any other write to such state computed from state whose writes are computed from it in turn (``self.n = self.n
  + 1``; ``self.a = self.b + 1`` with ``self.b = self.a``; through locals, loop variables, aliases made anywhere,
  ``self.view = self.state``, the values the module's functions return, a loop's exit test, a comprehension's
  ``if``). Storing an object back as it was read (``self.d[k] = self.d.get(k)``), the largest or smallest value seen
  (``max(self.m, n)``), a workspace grown to what the call needs (``if self.cap < need: self.cap = max(need, 2 *
  self.cap)``, ``while self.cap < need: self.cap *= 2``), a count up to at most MAX_BOUNDED (``if self.warned <
  3: self.warned += 1``) and an unconditional cycle of at most MAX_BOUNDED integer phases (``(self.i + 1) % 2``,
  ``1 - self.i``, ``self.i ^= 1``: every phase is observed) are no count;
* a container grown (``append``, ``extend``, ``insert``, ``appendleft``, ``extendleft``, a slice store of a list)
  or used up (``pop()``/``popleft()`` without a key, ``rotate``, ``remove`` of its own item, ``del c[0]``), unless
  bounded: the value is added only when absent (``if v not in c``, v not new at every call), only while empty
  (``if not c``) or below MAX_BOUNDED items, an item is removed only past a constant of at least one in a function
  that also adds (an LRU's eviction), or the container is a ``deque(maxlen=N)`` with N at most MAX_BOUNDED (fla's
  tensor cache);
* mutating methods taken as values (``push = self.log.append``), ``next`` as a value or on kept state (not on a
  fresh ``iter(...)``), ``operator.iadd``/``setitem``-style calls on kept state, ``cache_info()``;
* any use, in a function, of state the module binds to an iterator (``iter``, ``map``, ``zip``, a generator
  function or method, any ``itertools`` call, a ``collections.Counter``), or to what a module function returning
  one returns;
* on the forward path, a container keyed by or added an object made with an identity of its own at every call
  (``self.seen[object()] = 1``, forward's input tensors, a tensor torch makes, an instance of the module's class, a
  lambda; a defaultdict's lookup adds too) or a value read from a tensor's data or address (``x.data_ptr()``,
  ``x.item()``, ``int(digest)`` of a tensor a kernel filled): it grows at every call, and ``len()`` reads the count
  (a memo of results keyed by a hash of the input is refused so too). The largest value of such data seen
  (``max(self.peak, int(digest))``) is no size: it counts.

Cycles count together: the phases of every cycle in the file multiplied must stay at most MAX_BOUNDED, since
cycles of 61, 62 and 63 phases read together count to 238,266.

Locals are followed statement by statement (a name rebound holds its new value from there on; branches merge), so
the Triton tutorial's ``kernel, n = kernels.get(key, (None, 0))`` then ``kernels[key] = (kernel, n)`` is a cache;
closures off the forward path that run at import (a decorator's, a registry's) are judged only for what counts
whatever it is (``+=``, an item changed in place, ``next``, an iterator).

State is matched by name (every ``.n`` is one ``n``; attributes of inputs -- forward's arguments, and parameters
every caller hands a fresh value -- and what is stored directly on autograd's ``ctx`` are not state), which errs
towards reporting. A property is read through its getter and written through its setter (``b.k = b.k`` with a
getter returning ``self._k + 1`` counts). Known gaps: a count kept on the device (a kernel incrementing a persistent
buffer) and a tuple nested in itself (``self.h = (self.h, 1)``). Pure function over the AST.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from evaluator.static_model import ModuleModel, const_getattr, resolve

Report = Callable[[str, ast.AST, str], None]
Key = tuple[str, str]  # ("attr", name) for every `.name` of state; ("name", name) for a module-level or closure name
Flow = tuple[frozenset[Key], frozenset[Key]]  # (the state a value may be, the state it was computed from)
Scoped = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda

RULE = "call-state"
MAX_BOUNDED = 64  # a deque(maxlen=N), a container guarded below N items, a cycle mod N: every phase is observed
GROWING = frozenset({"append", "extend", "insert", "appendleft", "extendleft"})
CONSUMING = frozenset({"pop", "popleft", "popitem", "rotate", "remove", "discard"})  # reported when the next item goes
CHANGING = frozenset({"add", "update", "setdefault", "clear", "__setitem__", "put", "put_nowait", "sort", "reverse",
                      "move_to_end"})  # reported where computed from themselves or keyed by new objects
COUNTERS = frozenset({"cache_info"})
MUTATING_OPERATORS = frozenset({"operator.iadd", "operator.iconcat", "operator.ior", "operator.iand", "operator.ixor",
                                "operator.isub", "operator.imul", "operator.setitem", "operator.delitem"})
_ITERATOR_BUILTINS = frozenset({"iter", "map", "filter", "zip", "enumerate", "reversed"})
_ITERATOR_FACTORIES = frozenset({"collections.Counter"})  # and every itertools.*
_LOOKUPS = frozenset({"get", "setdefault", "pop"})  # with a key: hand on the object a container holds
_SELECTORS = frozenset({"max", "min"})  # hand on one of their arguments
_CONTAINER_BUILTINS = frozenset({"list", "tuple", "set", "frozenset", "dict", "sorted"})  # new, holding the items
_VALUE_BUILTINS = frozenset({"len", "int", "float", "str", "bool", "range", "abs", "round", "divmod", "isinstance",
                             "hasattr", "callable", "repr", "format", "bytearray", "hash", "type", "print"})
# what reads a tensor's data or address into a Python value: new at every call (a key that makes a container grow, a
# "largest value seen" that is no size)
_DATA_READS = frozenset({"int", "float", "bool", "complex", "hash", "str", "repr", "format", "round", "abs"})
_DATA_METHODS = frozenset({"data_ptr", "item", "tolist", "numpy", "untyped_storage", "storage"})
_CACHING_DECORATORS = frozenset({"functools.lru_cache", "functools.cache"})
_PROPERTIES = frozenset({"property", "functools.cached_property"})
_TENSOR_FACTORIES = frozenset({"empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
                               "empty_strided", "rand", "randn", "rand_like", "randn_like", "arange", "tensor",
                               "as_tensor", "cat", "stack"})
# builtins and methods that hand on (items of) what they are given: a loop over them walks the state itself
_PASSING_BUILTINS = frozenset({"enumerate", "reversed", "zip", "iter", "next", "operator.getitem", "filter", "map"})
_PASSING_METHODS = frozenset({"values", "items", "keys"})
# a tensor's conversions: the same data, converted (self.cos = self.cos.to(x.device) keeps a cache, counts nothing)
_CONVERSIONS = frozenset({"to", "detach", "contiguous", "float", "half", "bfloat16", "double", "int", "long", "cpu",
                          "cuda", "clone", "type", "view", "reshape", "t", "transpose", "permute", "expand",
                          "requires_grad_", "flatten", "squeeze", "unsqueeze", "type_as", "view_as", "reshape_as"})
_WHY = ("a kernel's result must not depend on how many times it ran: remove it; keep per-call values in locals and "
        "state across calls only as caches written from the call's arguments (a buffer per shape)")
_EMPTY: frozenset[Key] = frozenset()
# held by an object made with an identity of its own (object(), a tensor, an input, an instance of the module's class,
# a lambda): a key no earlier call made, so a container keyed by it grows at every call
FRESH: Key = ("fresh", "identity")


def _state(keys: Iterable[Key]) -> frozenset[Key]:
    """The keys that stand for state (not the mark of a new object)."""
    return frozenset(k for k in keys if k != FRESH)


@dataclass
class _Scope:
    """One function's bindings and, for each local, the state it may hold and the state it was computed from."""

    fn: Scoped
    outer: _Scope | None
    per_call: bool  # its locals are made afresh at every call of forward (it is forward or runs inside it)
    instance: str | None = None  # a method's first parameter
    context: str | None = None  # an autograd Function's ctx: an object made for each call
    params: set[str] = field(default_factory=set)
    inputs: set[str] = field(default_factory=set)  # parameters every caller hands a value made for the call
    fresh: set[str] = field(default_factory=set)  # inputs some caller hands a new object (forward's tensors)
    declared: set[str] = field(default_factory=set)  # global / nonlocal
    locals: set[str] = field(default_factory=set)
    holds: dict[str, set[Key]] = field(default_factory=dict)  # over every binding (closures read these)
    derived: dict[str, set[Key]] = field(default_factory=dict)
    at: dict[int, dict[str, Flow]] = field(default_factory=dict)  # statement -> what each local holds before it
    current: dict[str, Flow] | None = None  # the locals where the expression being judged sits


@dataclass
class _Write:
    node: ast.AST
    keys: frozenset[Key]  # the state it changes
    computed: frozenset[Key]  # the state its value is computed from
    always: bool  # reported whatever it reads (+=, growth, next, ...)
    bounded: bool = False  # a cycle or a count of at most MAX_BOUNDED, or grown to what a call needs
    aliases: frozenset[Key] = frozenset()  # the state its value is, as it was read (self.view = self.state)
    evicting: bool = False  # used up under a `len(c) > N` guard: fine where the same function also adds
    adding: bool = False  # a write that adds to its container (an item set, added or appended)
    anywhere: bool = False  # reported in whatever function it is (``__init__`` included)
    rebinds: bool = False  # stores a new object in a slot (self.x = v): changes no object that another name holds
    strong: bool = False  # reported in closures off the forward path too (+=, next, iterators, a mutated item)
    reorders: bool = False  # a rebinding to slices of itself and items not computed from it (an LRU's move to end)
    caps: bool = False  # a rebinding to a slice of itself under `len(c) >= N`, N at most MAX_BOUNDED (evicts)
    period: int = 0  # a cycle of this many phases (bounded only while all the file's cycles together stay small)


def _own_nodes(fn: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's (or the module's) own body: nested functions, lambdas and classes are scopes of
    their own (a nested def's decorators and defaults are the outer scope's)."""
    stack: list[ast.AST] = [fn.body] if isinstance(fn, ast.Lambda) else list(getattr(fn, "body", []))
    stack.reverse()
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            stack.extend([*node.decorator_list, *node.args.defaults, *(d for d in node.args.kw_defaults if d)])
        elif isinstance(node, ast.Lambda):
            stack.extend([*node.args.defaults, *(d for d in node.args.kw_defaults if d)])
        elif not isinstance(node, ast.ClassDef):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _store_targets(target: ast.AST) -> Iterator[ast.AST]:
    """The names, attributes and items a target stores into (unpacking a tuple or list target)."""
    if isinstance(target, ast.Tuple | ast.List):
        for item in target.elts:
            yield from _store_targets(item)
    elif isinstance(target, ast.Starred):
        yield from _store_targets(target.value)
    else:
        yield target


def _exit_tests(loop: ast.For | ast.AsyncFor | ast.While) -> list[ast.expr]:
    """The tests of the ``if`` statements in a loop's body that leave it (break / return): what its variable ends on."""
    return [n.test for n in ast.walk(loop) if isinstance(n, ast.If)
            and any(isinstance(x, ast.Break | ast.Return) for x in ast.walk(n))]


class _Loop(ast.Tuple):
    """A loop variable's value: the iterable (``elts[0]``) and the tests that end the loop (the rest)."""


def _bindings(node: ast.AST, parents: dict[int, ast.AST]) -> Iterator[tuple[ast.AST, ast.AST | None]]:
    """(target, value read into it) of every binding statement or expression; a loop variable also carries the
    tests that end the loop; a ``match`` capture binds (part of) the subject."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            yield target, node.value
    elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
        yield node.target, node.value
    elif isinstance(node, ast.For | ast.AsyncFor):
        tests = _exit_tests(node)
        yield node.target, _Loop([node.iter, *tests], ast.Load()) if tests else node.iter
    elif isinstance(node, ast.comprehension):
        yield node.target, node.iter
    elif isinstance(node, ast.With | ast.AsyncWith):
        for item in node.items:
            if item.optional_vars is not None:
                yield item.optional_vars, item.context_expr
    elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
        match = parents.get(id(node))
        while match is not None and not isinstance(match, ast.Match):
            match = parents.get(id(match))
        yield ast.Name(node.name, ast.Store()), match.subject if isinstance(match, ast.Match) else None


def _chain_key(expr: ast.AST) -> Key | None:
    """The state an attribute, item or name stands for: the last attribute of the chain, or the root name."""
    while isinstance(expr, ast.Subscript | ast.Starred):
        expr = expr.value
    if isinstance(expr, ast.Attribute):
        return ("attr", expr.attr)
    if (lookup := const_getattr(expr)) is not None:
        return ("attr", lookup[1])
    if isinstance(expr, ast.Name):
        return ("name", expr.id)
    return None


def _plain_chain(expr: ast.AST) -> bool:
    """A name, or attributes and items of one (``self.i``, ``self.d[k]``): no computation."""
    while isinstance(expr, ast.Attribute | ast.Subscript):
        expr = expr.value
    return isinstance(expr, ast.Name)


def _root(expr: ast.AST) -> ast.AST:
    """The object an attribute or item chain starts from (``self`` of ``self.d[k].x``, ``getattr(self, "d")``)."""
    while True:
        if isinstance(expr, ast.Attribute | ast.Subscript | ast.Starred):
            expr = expr.value
        elif (lookup := const_getattr(expr)) is not None:
            expr = lookup[0]
        else:
            return expr


def _int(expr: ast.AST | None) -> int | None:
    return expr.value if isinstance(expr, ast.Constant) and type(expr.value) is int else None


def _conditions(node: ast.AST, fn: ast.AST, parents: dict[int, ast.AST]) -> Iterator[tuple[ast.If | ast.While, bool]]:
    """The ``if``/``while`` statements around ``node`` in ``fn``, each with whether ``node`` is in its body."""
    child, parent = node, parents.get(id(node))
    while parent is not None and parent is not fn:
        if isinstance(parent, ast.If | ast.While) and child is not parent.test:
            yield parent, any(child is stmt for stmt in parent.body)
        child, parent = parent, parents.get(id(parent))


def _merge(*envs: dict[str, Flow]) -> dict[str, Flow]:
    """What each local may hold where paths meet: the union of what it holds on each."""
    merged: dict[str, Flow] = {}
    for env in envs:
        for name, (held, computed) in env.items():
            before = merged.get(name, (_EMPTY, _EMPTY))
            merged[name] = (before[0] | held, before[1] | computed)
    return merged


def _conjuncts(test: ast.AST) -> list[ast.AST]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [c for v in test.values for c in _conjuncts(v)]
    return [test]


class _Analysis:
    def __init__(self, tree: ast.Module, model: ModuleModel, path: Iterable[str]):
        self.tree, self.model = tree, model
        self.parents = model.parents
        on_path = [model.functions[k] for k in path if k in model.functions]
        used = [x for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                for x in n.decorator_list]
        named = lambda d: d.id if isinstance(d, ast.Name) else d.attr if isinstance(d, ast.Attribute) else None  # noqa
        decorators = {named(d) for d in used if not isinstance(d, ast.Call)} - {None}
        factories = {named(d.func) for d in used if isinstance(d, ast.Call)} - {None}
        once = {id(n) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                and n.name in decorators | factories}
        once |= {id(inner) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                 and n.name in factories for inner in n.body
                 if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef)}
        # functions whose locals are made afresh at every call of forward: those it runs, but not a decorator or a
        # decorator factory's decorator (they run once, where the function they decorate is defined: what their
        # closures keep lives on)
        self.per_call = {id(n) for fn in on_path for n in ast.walk(fn) if isinstance(n, Scoped) and id(n) not in once}
        self.contexts = {id(f) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and c.name in
                         model.autograd_functions for f in c.body if isinstance(f, ast.FunctionDef |
                                                                                ast.AsyncFunctionDef)
                         and f.name in ("forward", "backward", "setup_context", "jvp", "vjp")}
        self.methods = {id(f) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for f in c.body
                        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                        and not any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in f.decorator_list)}
        self.functions = [n for n in ast.walk(tree) if isinstance(n, Scoped)]
        self.defs_named: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        for n in self.functions:
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
                self.defs_named.setdefault(n.name, []).append(n)
        self.getters, self.setters = self.properties()
        self.generators = {n.name for n in self.functions if isinstance(n, ast.FunctionDef)
                           and any(isinstance(x, ast.Yield | ast.YieldFrom) for x in _own_nodes(n))}
        self.cached = {n.name for n in self.functions if isinstance(n, ast.FunctionDef) and any(
            resolve(d.func if isinstance(d, ast.Call) else d, model.aliases) in _CACHING_DECORATORS
            for d in n.decorator_list)}
        self.calls_of: dict[str, list[ast.Call]] = {}  # name -> the calls naming it (f(...), x.f(...))
        self.as_value: set[str] = set()  # names of functions used other than as a callee
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                callee = node.func.id if isinstance(node.func, ast.Name) else (
                    node.func.attr if isinstance(node.func, ast.Attribute) else None)
                if callee is not None:
                    self.calls_of.setdefault(callee, []).append(node)
            elif isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Load):
                name = node.id if isinstance(node, ast.Name) else node.attr
                parent = self.parents.get(id(node))
                if name in self.defs_named and not (isinstance(parent, ast.Call) and parent.func is node):
                    self.as_value.add(name)
        self.scopes: dict[int, _Scope] = {}
        self.summaries: dict[int, Flow] = {}
        self.module_values: dict[str, list[ast.AST | None]] = {}  # module-level names, `global` writes included
        for node in ast.walk(tree):
            for target, value in _bindings(node, self.parents):
                if isinstance(target, ast.Name) and self._module_level(target.id, node):
                    self.module_values.setdefault(target.id, []).append(value)
        self.iterators = self.bound_to(self.makes_iterator)  # each use moves them on
        self.defaultdicts = self.bound_to(  # whose lookups add
            lambda v: isinstance(v, ast.Call) and resolve(v.func, model.aliases) == "collections.defaultdict")

    def properties(self) -> tuple[dict[str, list[ast.AST]], dict[str, list[ast.AST]]]:
        """The module's properties by name: their getters (``@property``, ``@functools.cached_property``, the first
        argument of ``property(...)``) and setters (``@name.setter``, the second argument or ``fset=``). Reading
        ``obj.name`` runs a getter, assigning it runs a setter: their code is the attribute's value and its write."""
        getters: dict[str, list[ast.AST]] = {}
        setters: dict[str, list[ast.AST]] = {}
        for cls in (n for n in ast.walk(self.tree) if isinstance(n, ast.ClassDef)):
            for item in cls.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    for dec in item.decorator_list:
                        if isinstance(dec, ast.Attribute) and dec.attr == "setter":
                            setters.setdefault(item.name, []).append(item)
                        elif (resolve(dec, self.model.aliases) or getattr(dec, "id", "")) in _PROPERTIES:
                            getters.setdefault(item.name, []).append(item)
                for target, value in _bindings(item, self.parents):
                    if not (isinstance(target, ast.Name) and isinstance(value, ast.Call)
                            and (resolve(value.func, self.model.aliases) or getattr(value.func, "id", ""))
                            in _PROPERTIES):  # fmt: skip
                        continue
                    parts = {0: "fget", 1: "fset"}
                    named = {parts[i]: a for i, a in enumerate(value.args[:2])}
                    named.update({k.arg: k.value for k in value.keywords if k.arg in ("fget", "fset")})
                    for role, table in (("fget", getters), ("fset", setters)):
                        fn = named.get(role)
                        found = self.defs_named.get(fn.id, []) if isinstance(fn, ast.Name) else \
                            [fn] if isinstance(fn, ast.Lambda) else []
                        table.setdefault(target.id, []).extend(found)
        return getters, setters

    def _module_level(self, name: str, node: ast.AST) -> bool:
        fn = self.enclosing(node)
        return fn is None or name in self.scope(fn).declared

    def enclosing(self, node: ast.AST) -> Scoped | None:
        parent = self.parents.get(id(node))
        while parent is not None and not isinstance(parent, Scoped):
            parent = self.parents.get(id(parent))
        return parent

    def reported_in(self, fn: Scoped) -> bool:
        """Whether counts in ``fn`` are reported: forward can run it (on the path, or a closure), and it is no
        ``__init__`` (which builds once)."""
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and fn.name == "__init__":
            return False
        return id(fn) in self.per_call or self.enclosing(fn) is not None

    # -- what a function binds, and what its locals hold ----------------------------------------------------------

    def scope(self, fn: Scoped) -> _Scope:
        if id(fn) in self.scopes:
            return self.scopes[id(fn)]
        outer_fn = self.enclosing(fn)
        outer = self.scope(outer_fn) if outer_fn is not None else None
        scope = self.scopes[id(fn)] = _Scope(fn, outer, id(fn) in self.per_call)
        args = fn.args
        ordered = [*args.posonlyargs, *args.args]
        if id(fn) in self.contexts and ordered:
            scope.context = ordered[0].arg
        elif id(fn) in self.methods and ordered:
            scope.instance = ordered[0].arg
        for arg in [*ordered, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is not None:
                scope.params.add(arg.arg)
        bound: list[tuple[str, ast.AST | None]] = []
        for node in _own_nodes(fn):
            if isinstance(node, ast.Global | ast.Nonlocal):
                scope.declared.update(node.names)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                scope.locals.add(node.name)
            for target, value in _bindings(node, self.parents):
                for part in _store_targets(target):
                    if isinstance(part, ast.Name):
                        scope.locals.add(part.id)
                        if isinstance(node, ast.AugAssign):  # `n += 1`: n computed from itself
                            value = ast.BinOp(ast.Name(part.id, ast.Load()), node.op, node.value)
                        elif part is not target and isinstance(value, ast.expr):  # a, b = pair: an item of it
                            value = ast.Subscript(value, ast.Constant(0), ast.Load())
                        bound.append((part.id, value))
        scope.locals -= scope.params | scope.declared
        defaults = [*zip(reversed(ordered), reversed(args.defaults), strict=False),
                    *((a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None)]
        for arg, default in defaults:  # a default is made once, in the outer scope: it outlives every call
            if not isinstance(default, ast.Constant):
                held, computed = self.flow(default, outer)
                default_key = ("name", f"{getattr(fn, 'name', 'lambda')}.{arg.arg}")
                scope.holds[arg.arg] = {*_state(held), *computed, default_key}
        scope.inputs, scope.fresh = self.input_params(fn, scope, ordered)
        for _ in range(len(bound) + 1):  # locals read from locals: until nothing changes
            changed = False
            for name, value in bound:
                if name not in scope.locals:
                    continue
                held, computed = self.flow(value, scope)
                for into, keys in ((scope.holds, held), (scope.derived, computed)):
                    if not keys <= into.get(name, set()):
                        into.setdefault(name, set()).update(keys)
                        changed = True
            if not changed:
                break
        if not isinstance(fn, ast.Lambda):
            self.run(fn.body, {}, scope)
            scope.current = None
        return scope

    # -- the locals statement by statement: a name rebound holds its new value from there on --------------------------

    def run(self, statements: list[ast.stmt], env: dict[str, Flow], scope: _Scope) -> dict[str, Flow]:
        for statement in statements:
            scope.at[id(statement)] = dict(env)
            env = self.step(statement, env, scope)
        return env

    def step(self, st: ast.stmt, env: dict[str, Flow], scope: _Scope) -> dict[str, Flow]:
        scope.current = env
        if isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return {**env, st.name: (_EMPTY, _EMPTY)}
        if isinstance(st, ast.Assign | ast.AnnAssign | ast.AugAssign):
            return self.bind(st, env, scope)
        if isinstance(st, ast.If):
            return _merge(self.run(st.body, dict(env), scope), self.run(st.orelse, dict(env), scope))
        if isinstance(st, ast.For | ast.AsyncFor | ast.While):
            state = env
            for _ in range(2):  # what one pass of the body leaves, the next pass starts with
                inside = self.bind(st, dict(state), scope) if not isinstance(st, ast.While) else dict(state)
                state = _merge(state, self.run(st.body, inside, scope))
            return self.run(st.orelse, state, scope) if st.orelse else state
        if isinstance(st, ast.With | ast.AsyncWith):
            return self.run(st.body, self.bind(st, env, scope), scope)
        if isinstance(st, ast.Try | getattr(ast, "TryStar", ast.Try)):
            body = self.run(st.body, dict(env), scope)
            handlers = [self.run(h.body, _merge(env, body), scope) for h in st.handlers]
            done = self.run(st.orelse, body, scope)
            return self.run(st.finalbody, _merge(done, *handlers), scope)
        if isinstance(st, ast.Match):
            return _merge(env, *(self.run(case.body, dict(env), scope) for case in st.cases))
        return env

    def bind(self, st: ast.AST, env: dict[str, Flow], scope: _Scope) -> dict[str, Flow]:
        scope.current = env
        env = dict(env)
        for target, value in _bindings(st, self.parents):
            for part in _store_targets(target):
                if not (isinstance(part, ast.Name) and part.id in scope.locals):
                    continue
                if isinstance(st, ast.AugAssign):
                    value = ast.BinOp(ast.Name(part.id, ast.Load()), st.op, st.value)
                elif part is not target and isinstance(value, ast.expr):
                    value = ast.Subscript(value, ast.Constant(0), ast.Load())
                env[part.id] = self.flow(value, scope)
        return env

    def judged_at(self, node: ast.AST, scope: _Scope) -> None:
        """Judge ``node`` with the locals as they are at its statement."""
        here: ast.AST | None = node
        while here is not None and id(here) not in scope.at:
            here = self.parents.get(id(here))
        scope.current = scope.at.get(id(here)) if here is not None else None

    def input_params(self, fn: Scoped, scope: _Scope, ordered: list[ast.arg]) -> tuple[set[str], set[str]]:
        """(the parameters that hold a value made for the call, those of them some caller hands a new object):
        forward's (all new), and a function's whose every caller in the module passes such a value there (a
        function also used as a value may be called with anything)."""
        names = [a.arg for a in ordered]
        candidates = {n for n in scope.params if n not in (scope.instance, scope.context) and n not in scope.holds}
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) or not candidates:
            return set(), set()
        if fn.name == "forward" and id(fn) in self.methods:
            return candidates, set(candidates)
        if fn.name in self.as_value or fn.name not in self.calls_of or len(self.defs_named.get(fn.name, [])) > 1:
            return set(), set()
        offset = 1 if scope.instance is not None else 0
        inputs, fresh = set(candidates), set()
        for call in self.calls_of[fn.name]:
            caller_fn = self.enclosing(call)
            if caller_fn is None or caller_fn is fn:
                return set(), set()
            caller = self.scope(caller_fn)
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                return set(), set()
            passed = {names[i + offset]: a for i, a in enumerate(call.args) if i + offset < len(names)}
            passed.update({k.arg: k.value for k in call.keywords if k.arg})
            for name, arg in passed.items():
                if name in inputs and self.persistent_value(arg, caller):
                    inputs.discard(name)
                elif FRESH in self.flow(arg, caller)[0]:
                    fresh.add(name)
        return inputs, fresh & inputs

    def persistent_value(self, expr: ast.AST, scope: _Scope) -> bool:
        """Whether ``expr`` may be an object that outlives the call (not one made in it, not an input)."""
        if isinstance(expr, ast.Name):
            return self.persistent_name(expr.id, scope)
        return bool(_state(self.flow(expr, scope)[0]))

    def name_flow(self, name: str, scope: _Scope | None) -> Flow:
        """What a name read in ``scope`` may hold: a local's values, a parameter itself and its default, an enclosing
        function's local (kept across calls unless that function runs at every call and made it there), else a
        module name."""
        if scope is None:
            return frozenset({("name", name)}), _EMPTY
        if name in scope.locals:
            if scope.current is not None and name in scope.current:
                return scope.current[name]
            return frozenset(scope.holds.get(name, ())), frozenset(scope.derived.get(name, ()))
        if name in scope.params:
            if name in scope.inputs or name == scope.context:  # made for the call: a new object, or a value
                return frozenset({FRESH}) if name in scope.fresh or name == scope.context else _EMPTY, _EMPTY
            return frozenset({*scope.holds.get(name, ()), ("param", f"{id(scope.fn)}.{name}")}), _EMPTY
        if name in scope.declared or scope.outer is None:
            return frozenset({("name", name)}), _EMPTY
        held, computed = self.name_flow(name, scope.outer)
        if name in scope.outer.locals and not (scope.outer.per_call and not _state(held)):
            held = held | {("name", name)}
        return held, computed

    def persistent_name(self, name: str, scope: _Scope) -> bool:
        """Whether the object a name is bound to outlives a call of forward."""
        if name in scope.params and name != scope.context and name not in scope.inputs:
            return True
        return bool(_state(self.name_flow(name, scope)[0]))

    def flow(self, expr: ast.AST | None, scope: _Scope | None) -> Flow:
        """(the state ``expr``'s value may be, the state it was computed from)."""
        if expr is None or isinstance(expr, ast.Constant):
            return _EMPTY, _EMPTY
        if isinstance(expr, ast.Lambda):
            return frozenset({FRESH}), _EMPTY
        if isinstance(expr, ast.Name):
            return self.name_flow(expr.id, scope)
        if isinstance(expr, ast.Attribute) or const_getattr(expr) is not None:
            base, attr = (expr.value, expr.attr) if isinstance(expr, ast.Attribute) else const_getattr(expr)  # type: ignore[misc]
            return self.attribute_flow(base, attr, scope)
        if isinstance(expr, ast.Subscript):
            held, computed = self.flow(expr.value, scope)
            return held, computed | self.all(expr.slice, scope)
        if isinstance(expr, ast.Starred | ast.NamedExpr):
            return self.flow(expr.value, scope)
        if isinstance(expr, ast.IfExp):  # its test only chooses
            return self.union(self.flow(expr.body, scope), self.flow(expr.orelse, scope))
        if isinstance(expr, ast.BoolOp):
            return self.union(*(self.flow(v, scope) for v in expr.values))
        if isinstance(expr, ast.Call):
            return self.call_flow(expr, scope)
        if isinstance(expr, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            tests = frozenset().union(*(self.all(e, scope) for g in expr.generators for e in [g.iter, *g.ifs]))
            items = [expr.key, expr.value] if isinstance(expr, ast.DictComp) else [expr.elt]
            held, computed = self.union(*(self.flow(e, scope) for e in items))
            return held, computed | _state(tests)
        if isinstance(expr, _Loop):  # the item the loop ends on: chosen by its tests (a search over the iterable
            held, computed = self.flow(expr.elts[0], scope)  # is a lookup, a search for a number past state is not)
            tests = frozenset().union(*(self.all(t, scope) for t in expr.elts[1:]))
            return held, computed | _state(tests - held)
        if isinstance(expr, ast.Tuple | ast.List | ast.Set | ast.Dict):  # a new container holding what it is given
            return self.union(*(self.flow(c, scope) for c in ast.iter_child_nodes(expr) if isinstance(c, ast.expr)))
        if isinstance(expr, ast.BinOp):  # arithmetic (or concatenation): computed from both sides
            parts = [self.flow(c, scope) for c in (expr.left, expr.right)]
            held = frozenset().union(*(h for h, _ in parts))
            return held, _state(held) | frozenset().union(*(c for _, c in parts))
        return _EMPTY, _state(self.all_children(expr, scope))

    def attribute_flow(self, base: ast.AST, attr: str, scope: _Scope | None) -> Flow:
        held, computed = self.flow(base, scope)
        if attr in self.getters:  # a property: reading it returns what its getter computes
            got_held, got_computed = self.union(*(self.summary(g) for g in self.getters[attr]))
            return frozenset({("attr", attr)}) | got_held, computed | got_computed
        if isinstance(base, ast.Name) and scope is not None and (
                base.id in scope.inputs or base.id in scope.locals and not _state(held)):
            return _EMPTY, computed  # an attribute of an input (x.shape) or of an object made in this call
        if isinstance(base, ast.Name) and scope is not None and base.id in scope.params:
            return frozenset({("attr", attr)}), computed  # self.n is an object of its own, not self
        return frozenset({("attr", attr)}), computed  # c.n of a local c holding state: the attribute's own object

    def call_flow(self, call: ast.Call, scope: _Scope | None) -> Flow:
        func = call.func
        args = [*call.args, *(k.value for k in call.keywords)]
        arguments = frozenset().union(*(self.all(a, scope) for a in args))
        if isinstance(func, ast.Attribute) and func.attr in _LOOKUPS and call.args and not call.keywords:
            held, computed = self.flow(func.value, scope)
            return held, computed | arguments
        if isinstance(func, ast.Call) and resolve(func.func, self.model.aliases) == "operator.attrgetter" and \
                call.args and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in func.args):
            names = [str(a.value).rsplit(".", 1)[-1] for a in func.args if isinstance(a, ast.Constant)]
            flows = [self.attribute_flow(call.args[0], n, scope) for n in names]
            return self.union(*flows)
        name = func.id if isinstance(func, ast.Name) else None
        dotted = resolve(func, self.model.aliases) or name or ""
        if name in _SELECTORS:
            held, computed = self.union(*(self.flow(a, scope) for a in args))
            if FRESH in held:  # the largest value of data seen (a hash): computed from it, no size
                return _EMPTY, computed | _state(held)
            return held, computed
        if name in _CONTAINER_BUILTINS:
            held = _state(frozenset().union(*(self.flow(a, scope)[0] for a in args)))
            return held, held | _state(arguments)
        if name == "object" or name in self.model.classes:
            return frozenset({FRESH}), _state(arguments)
        if name in _VALUE_BUILTINS:  # a value read from a tensor's data is new at every call, like the tensor
            data = name in _DATA_READS and any(FRESH in self.flow(a, scope)[0] for a in args)
            return frozenset({FRESH}) if data else _EMPTY, _state(arguments)
        if isinstance(func, ast.Attribute) and func.attr in _DATA_METHODS:  # x.item(), x.data_ptr(), ...
            return frozenset({FRESH}), _state(arguments | self.all(func.value, scope))
        if dotted.split(".", 1)[0] == "torch" and dotted.rsplit(".", 1)[-1] in _TENSOR_FACTORIES:
            return frozenset({FRESH}), _state(arguments)  # a new tensor: an object no earlier call made
        if dotted.split(".", 1)[0] in ("torch", "triton", "math"):
            return _EMPTY, _state(arguments)
        receiver = func.value if isinstance(func, ast.Attribute) else None
        if isinstance(func, ast.Attribute) and func.attr in _CONVERSIONS | _PASSING_METHODS:
            held, computed = self.flow(receiver, scope)
            return _state(held), computed | _state(arguments)
        if dotted in _PASSING_BUILTINS:
            held = frozenset().union(*(self.flow(a, scope)[0] for a in args))
            return _state(held), frozenset().union(*(self.flow(a, scope)[1] for a in args))
        local_def = self.local_def(name, scope) if name else None
        targets: list[ast.AST] = [local_def] if local_def is not None else list(
            self.defs_named.get(name or "", []) if isinstance(func, ast.Name) else
            self.defs_named.get(func.attr, []) if isinstance(func, ast.Attribute) else [])
        computed = _state(arguments | self.all(receiver, scope))
        if targets:  # the module's function: what it returns
            held, returned = self.union(*(self.summary(t) for t in targets))
            if name in self.cached or isinstance(func, ast.Attribute) and func.attr in self.cached:
                held = held | {("name", f"{name or getattr(func, 'attr', '')}()")}  # kept by its cache
            return held, computed | returned
        return _EMPTY, computed  # another library's: a new value, computed from what it is given

    def summary(self, fn: ast.AST) -> Flow:
        """What a function of the module returns: (the state it may be, the state it was computed from)."""
        if id(fn) not in self.summaries:
            self.summaries[id(fn)] = (_EMPTY, _EMPTY)  # a recursive call adds nothing new
            if isinstance(fn, ast.Lambda):
                returned = [fn.body]
            else:
                returned = [n.value for n in _own_nodes(fn) if isinstance(n, ast.Return) and n.value is not None]
            scope = self.scope(fn) if isinstance(fn, Scoped) else None
            held, computed = self.union(*(self.flow(v, scope) for v in returned)) if returned else (_EMPTY, _EMPTY)
            self.summaries[id(fn)] = (_state(held), _state(computed))
        return self.summaries[id(fn)]

    def local_def(self, name: str, scope: _Scope | None) -> ast.AST | None:
        """The function a name bound by a ``def`` in ``scope`` or an enclosing function stands for."""
        while scope is not None:
            if name in scope.params or name in scope.declared:
                return None
            if name in scope.locals:
                return next((n for n in _own_nodes(scope.fn)
                             if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name), None)
            scope = scope.outer
        return None

    def union(self, *flows: Flow) -> Flow:
        return frozenset().union(*(h for h, _ in flows)), frozenset().union(*(c for _, c in flows))

    def all(self, expr: ast.AST | None, scope: _Scope | None) -> frozenset[Key]:
        held, computed = self.flow(expr, scope)
        return held | computed

    def all_children(self, expr: ast.AST, scope: _Scope | None) -> frozenset[Key]:
        return frozenset().union(*(self.all(c, scope) for c in ast.iter_child_nodes(expr) if isinstance(c, ast.expr)))

    # -- containers kept small, iterators kept ----------------------------------------------------------------------

    def bounded_deque(self, container: ast.AST, scope: _Scope) -> bool:
        """``container`` is a name bound only to ``deque(maxlen=N)``, N at most MAX_BOUNDED: it holds the last few
        values, so its length counts no further than a verifier process calls (fla's tensor cache)."""
        if not isinstance(container, ast.Name):
            return False
        values = self.values_of(container.id, scope)
        return bool(values) and all(self.is_bounded_deque(v) for v in values)

    def values_of(self, name: str, scope: _Scope | None) -> list[ast.AST | None]:
        while scope is not None:
            if name in scope.params:
                return [None]
            if name in scope.locals:
                return [v for node in _own_nodes(scope.fn) for t, v in _bindings(node, self.parents)
                        if isinstance(t, ast.Name) and t.id == name] or [None]
            scope = scope.outer  # a nonlocal is an enclosing function's; a global falls through to the module
        return self.module_values.get(name, [None])

    def is_bounded_deque(self, value: ast.AST | None) -> bool:
        if not (isinstance(value, ast.Call) and resolve(value.func, self.model.aliases) == "collections.deque"):
            return False
        maxlen = next((k.value for k in value.keywords if k.arg == "maxlen"),
                      value.args[1] if len(value.args) > 1 else None)
        return maxlen is not None and self.small(maxlen)

    def small(self, expr: ast.AST) -> bool:
        """An int that is at most MAX_BOUNDED whatever it is (a constant, module constants)."""
        values = self.int_values(expr)
        return all(n is not None and 0 <= n <= MAX_BOUNDED for n in values)

    def int_values(self, expr: ast.AST) -> list[int | None]:
        """The ints ``expr`` may be: a constant, a module constant, ``int(os.getenv(NAME, "4"))`` (its default: a
        setting of the user's, which no candidate chooses); None for anything else."""
        if (value := _int(expr)) is not None:
            return [value]
        if isinstance(expr, ast.Name) and expr.id in self.module_values:
            return [n for v in self.module_values[expr.id] for n in (self.int_values(v) if v is not None else [None])]
        if (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "int"
                and len(expr.args) == 1 and isinstance(env := expr.args[0], ast.Call)
                and resolve(env.func, self.model.aliases) in ("os.getenv", "os.environ.get") and len(env.args) == 2
                and isinstance(env.args[1], ast.Constant) and isinstance(env.args[1].value, str)
                and env.args[1].value.isdigit()):
            return [int(env.args[1].value)]
        return [None]

    def makes_iterator(self, value: ast.AST | None, seen: frozenset[str] = frozenset()) -> bool:
        """Whether a value is, or holds, an iterator (or a Counter): iter/map/zip/..., a generator (expression,
        function or method), any itertools call, or what a module function that returns one returns."""
        if value is None:
            return False
        if isinstance(value, ast.GeneratorExp):
            return True
        if isinstance(value, ast.Tuple | ast.List | ast.Set | ast.Dict):
            return any(self.makes_iterator(v, seen) for v in ast.iter_child_nodes(value) if isinstance(v, ast.expr))
        if any(isinstance(n, ast.Call) and self.factory(n) for n in ast.walk(value)):
            return True
        if not isinstance(value, ast.Call):
            return False
        callee = value.func.id if isinstance(value.func, ast.Name) else (
            value.func.attr if isinstance(value.func, ast.Attribute) else "")
        if callee in _ITERATOR_BUILTINS and isinstance(value.func, ast.Name) or callee in self.generators:
            return True
        if callee in seen:
            return False
        return any(isinstance(n, ast.Return) and self.makes_iterator(n.value, seen | {callee})
                   for fn in self.defs_named.get(callee, []) for n in _own_nodes(fn))

    def factory(self, call: ast.Call) -> bool:
        name = resolve(call.func, self.model.aliases) or ""
        return name in _ITERATOR_FACTORIES or name.startswith("itertools.")

    def bound_to(self, made: Callable[[ast.AST | None], bool]) -> set[Key]:
        """The state the module binds (attributes anywhere, names at module level) to a value ``made`` accepts."""
        keys: set[Key] = set()
        for node in ast.walk(self.tree):
            for target, value in _bindings(node, self.parents):
                if made(value.elts[0] if isinstance(value, _Loop) else value):
                    keys.update(k for part in _store_targets(target) if (k := _chain_key(part)) is not None
                                and (not isinstance(part, ast.Name) or self._module_level(part.id, node)))
        return keys

    # -- the writes ---------------------------------------------------------------------------------------------------

    def target_keys(self, target: ast.AST, scope: _Scope) -> frozenset[Key] | None:
        """The state storing into ``target`` changes, or None when it changes nothing that outlives the call."""
        if isinstance(target, ast.Name):
            return frozenset({("name", target.id)}) if target.id in scope.declared else None
        if not isinstance(target, ast.Attribute | ast.Subscript | ast.Starred):
            return None
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and \
                target.value.id == scope.context:
            return None  # ctx.x = v: left for this call's backward
        root = _root(target)
        if isinstance(root, ast.Name) and root.id == scope.context:  # ctx.box[0] = ...: what ctx.box holds may be state
            key = _chain_key(target)
            return frozenset({key}) if key is not None and key[0] == "attr" else None
        if isinstance(root, ast.Name):
            if not self.persistent_name(root.id, scope):
                return None
        elif not _state(self.flow(root, scope)[0]) and (not isinstance(root, ast.Call) or self.fresh_call(root)):
            return None
        if isinstance(target, ast.Attribute):  # the attribute's slot, and the object it belongs to unless a parameter
            held_by_base = _state(self.flow(target.value, scope)[0])
            return frozenset({("attr", target.attr), *(k for k in held_by_base if k[0] != "param")})
        held = _state(self.flow(target.value, scope)[0])
        return held or frozenset({("name", getattr(root, "id", "?"))})

    def fresh_call(self, call: ast.Call) -> bool:
        """A call that makes a new object (a builtin container or value, a torch, triton or math function's result);
        any other call may return one that lives on (``type(self)``, a helper's cache)."""
        name = resolve(call.func, self.model.aliases) or (call.func.id if isinstance(call.func, ast.Name) else "")
        return name in (_VALUE_BUILTINS - {"type"}) | _CONTAINER_BUILTINS or \
            name.split(".", 1)[0] in ("torch", "triton", "math")

    def writes_in(self, fn: Scoped) -> list[_Write]:
        scope = self.scope(fn)
        found: list[_Write] = []
        for node in _own_nodes(fn):
            self.judged_at(node, scope)
            for target, value in _bindings(node, self.parents):
                for part in _store_targets(target):
                    found.extend(self._store(node, part, value, scope))
            if isinstance(node, ast.Delete):
                for target in node.targets:
                    keys = self.target_keys(target, scope)
                    if keys and isinstance(target, ast.Subscript):  # the next item, or one the container handed out
                        index = target.slice
                        consumes = _int(index) is not None or isinstance(index, ast.Slice) or \
                            isinstance(index, ast.UnaryOp) and _int(index.operand) is not None or \
                            bool(self.flow(index, scope)[0] & keys)
                        evicting = consumes and self.evicting(node, target.value, scope)
                        found.append(_Write(node, keys, _EMPTY, always=consumes and not evicting, evicting=evicting))
            if isinstance(node, ast.Attribute) and node.attr in GROWING | CONSUMING | CHANGING and not (
                    isinstance(parent := self.parents.get(id(node)), ast.Call) and parent.func is node):
                keys = self.container_keys(node.value, scope)
                if keys:  # a mutating method taken as a value: called where nothing follows it
                    found.append(_Write(node, keys, _EMPTY, always=True, anywhere=True, strong=True))
            if isinstance(node, ast.Name) and node.id == "next" and isinstance(node.ctx, ast.Load) and not (
                    isinstance(parent := self.parents.get(id(node)), ast.Call) and parent.func is node):
                found.append(_Write(node, frozenset({("name", "next")}), _EMPTY, always=True, anywhere=True,
                                    strong=True))
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and scope.per_call and \
                    _chain_key(node.value) in self.defaultdicts and FRESH in self.flow(node.slice, scope)[0]:
                keys = self.container_keys(node.value, scope)
                if keys:  # a defaultdict's lookup keyed by a new object adds it
                    found.append(_Write(node, keys, _EMPTY, always=True))
            if isinstance(node, ast.Call):
                found.extend(self._call(node, scope))
        scope.current = None
        capped = {k for w in found if w.caps for k in w.keys}  # kept at a few items here: growing it counts no further
        for write in found:
            if write.keys & capped and (write.reorders or write.adding or write.caps):
                write.always, write.bounded = False, True
        adds = {k for w in found if w.adding for k in w.keys}
        for write in found:  # an eviction is bounded where the same function adds to the container
            if write.evicting:
                write.always, write.bounded = not write.keys & adds, bool(write.keys & adds)
        return found

    def container_keys(self, container: ast.AST, scope: _Scope) -> frozenset[Key] | None:
        """The state a container expression is, where it outlives the call (None for a fresh one)."""
        if isinstance(container, ast.Call) and isinstance(container.func, ast.Attribute) and \
                container.func.attr in _LOOKUPS:  # self.d.setdefault(k, []).append(...)
            return self.container_keys(container.func.value, scope)
        if isinstance(container, ast.Name):
            if not self.persistent_name(container.id, scope):
                return None
            held = _state(self.name_flow(container.id, scope)[0])
            return held or frozenset({("name", container.id)})
        if isinstance(container, ast.Attribute | ast.Subscript):
            return self.target_keys(container, scope)
        return _state(self.flow(container, scope)[0]) or None

    def _store(self, node: ast.AST, part: ast.AST, value: ast.AST | None, scope: _Scope) -> Iterator[_Write]:
        if isinstance(node, ast.AugAssign) and isinstance(part, ast.Name) and part.id not in scope.declared:
            grows = isinstance(node.value, ast.List | ast.Tuple | ast.Set | ast.Dict | ast.ListComp | ast.SetComp
                               | ast.DictComp) or (
                isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                and node.value.func.id in _CONTAINER_BUILTINS)
            if grows and self.persistent_name(part.id, scope):  # log = self.log; log += [0] grows self.log
                keys = _state(self.name_flow(part.id, scope)[0]) or frozenset({("name", part.id)})
                yield _Write(node, keys, _EMPTY, True, strong=True)
            return
        stored = self.target_keys(part, scope)
        if not stored:
            return
        keys = stored
        if isinstance(node, ast.AugAssign):
            toggle = isinstance(node.op, ast.BitXor) and _int(node.value) == 1 and self.unconditional(node, scope)
            bounded = self.small_count(node, part, scope) or self.saturating(node, part, None, scope) or toggle
            yield _Write(node, keys, _EMPTY, always=not bounded, strong=True, period=2 if toggle else 0)
            return
        index = part.slice if isinstance(part, ast.Subscript) else None
        if isinstance(part, ast.Subscript) and isinstance(index, ast.Slice) and \
                isinstance(value, ast.List | ast.Tuple | ast.ListComp) and not self.guarded(node, part.value, scope):
            yield _Write(node, keys, _EMPTY, always=True)  # self.log[n:] = [0] grows it
            return
        if scope.per_call and index is not None and FRESH in self.flow(index, scope)[0]:
            yield _Write(node, keys, _EMPTY, always=True)  # self.seen[object()] = 1 grows at every call
            return
        held, computed = self.flow(value, scope)
        own = _chain_key(part)
        reorders = own is not None and self.of_itself(value, own, scope)
        caps = reorders and isinstance(value, ast.Subscript) and self.evicting(node, part, scope, small=True)
        passed = isinstance(value, ast.Name | ast.Attribute | ast.Subscript | ast.IfExp | ast.BoolOp) or (
            isinstance(value, ast.Call) and (const_getattr(value) is not None or isinstance(value.func, ast.Attribute)
                                             and value.func.attr in _LOOKUPS
                                             or isinstance(value.func, ast.Name) and value.func.id in _SELECTORS))
        period = self.cycle_period(part, value) if self.unconditional(node, scope) else None
        bounded = self.saturating(node, part, value, scope) or period is not None
        yield _Write(node, keys, _state(computed | self.all(index, scope)), always=False, bounded=bounded,
                     period=period or 0,
                     aliases=frozenset(k for k in _state(held) if k[0] != "param") if passed else _EMPTY,
                     adding=isinstance(part, ast.Subscript), rebinds=not isinstance(part, ast.Subscript),
                     strong=isinstance(part, ast.Subscript), reorders=reorders, caps=caps)

    def _call(self, call: ast.Call, scope: _Scope) -> Iterator[_Write]:
        func = call.func
        name = resolve(func, self.model.aliases)
        if name in MUTATING_OPERATORS and call.args:
            keys = self.container_keys(call.args[0], scope)
            if keys:
                yield _Write(call, keys, _EMPTY, always=True, strong=True)
            return
        if isinstance(func, ast.Name) and func.id == "next" and call.args:
            arg = call.args[0]
            fresh_iterator = isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) and arg.func.id == "iter"
            keys = None if fresh_iterator else self.container_keys(arg, scope)
            if keys:
                yield _Write(call, keys, _EMPTY, always=True, strong=True)
            return
        if not isinstance(func, ast.Attribute):
            return
        if func.attr in COUNTERS:
            yield _Write(call, frozenset({("attr", func.attr)}), _EMPTY, always=True, strong=True)
            return
        if func.attr not in GROWING | CONSUMING | CHANGING:
            return
        keys = self.container_keys(func.value, scope)
        if not keys:
            return
        args = [*call.args, *(k.value for k in call.keywords)]
        held = frozenset().union(*(self.flow(a, scope)[0] for a in args))
        keyed = frozenset().union(*(self.flow(a, scope)[0] for a in (  # what becomes a key: not setdefault's default
            call.args[:1] if func.attr in ("add", "setdefault", "discard") else call.args)))
        evicting = False
        if func.attr in GROWING:
            always = not (self.bounded_deque(func.value, scope) or self.guarded(call, func.value, scope, args, held))
        elif func.attr in CONSUMING:  # the next item (no key), or an item the container itself handed out
            consumes = func.attr == "rotate" or not call.args or bool(held & keys)
            evicting = consumes and self.evicting(call, func.value, scope)
            always = consumes and not evicting
        else:  # add/update/setdefault: a count only when what it adds is new at every call
            always = scope.per_call and FRESH in keyed
        yield _Write(call, keys, _state(frozenset().union(*(self.flow(a, scope)[1] for a in args))), always,
                     evicting=evicting, adding=func.attr in GROWING or func.attr in ("add", "update", "setdefault"))

    # -- what bounds a write -----------------------------------------------------------------------------------------

    def guarded(self, node: ast.AST, container: ast.AST, scope: _Scope, added: list[ast.expr] | None = None,
                held: frozenset[Key] = _EMPTY) -> bool:
        """Whether an ``if`` around ``node`` bounds what it adds to ``container``: only when absent (and not new at
        every call, which is always absent), only while empty or below MAX_BOUNDED items."""
        key = _chain_key(container)
        for branch, in_body in _conditions(node, scope.fn, self.parents):
            if in_body and isinstance(branch, ast.If) and any(self._adds_bounded(t, key, added or [], FRESH in held)
                                                              for t in _conjuncts(branch.test)):
                return True
        return False

    def _adds_bounded(self, test: ast.AST, key: Key | None, added: list[ast.expr], new: bool) -> bool:
        same = lambda e: _chain_key(e) == key and _plain_chain(e)  # noqa: E731
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return same(test.operand)
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return False
        op, left, right = test.ops[0], test.left, test.comparators[0]
        if isinstance(op, ast.NotIn) and same(right) and not new and any(ast.dump(left) == ast.dump(a) for a in added):
            return True
        return self._sized(left, same) and (isinstance(op, ast.Eq) and _int(right) == 0 or
                                           isinstance(op, ast.Lt | ast.LtE) and self.small(right))

    def of_itself(self, value: ast.AST | None, key: Key, scope: _Scope) -> bool:
        """``c[1:]``, ``c[:i] + c[i + 1:] + [item]``: slices of the state joined with items not computed from it."""
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            return self.of_itself(value.left, key, scope) and self.of_itself(value.right, key, scope)
        if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Slice):
            return _plain_chain(value.value) and _chain_key(value.value) == key
        return isinstance(value, ast.List | ast.Tuple) and key not in self.flow(value, scope)[1]

    def evicting(self, node: ast.AST, container: ast.AST, scope: _Scope, small: bool = False) -> bool:
        """Under ``if len(c) > N`` (N at least one; with ``small``, at most MAX_BOUNDED): the container is kept at a
        constant size."""
        key = _chain_key(container)
        same = lambda e: _chain_key(e) == key and _plain_chain(e)  # noqa: E731
        reads = lambda e: any(_chain_key(n) == key for n in ast.walk(e)  # noqa: E731
                              if isinstance(n, ast.Attribute | ast.Name | ast.Subscript))
        for branch, in_body in _conditions(node, scope.fn, self.parents):
            for test in _conjuncts(branch.test) if in_body else ():
                if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Gt | ast.GtE) \
                        and self._sized(test.left, same) and not reads(bound := test.comparators[0]) and \
                        all(n is None or n >= 1 for n in self.int_values(bound)) and \
                        (not small or self.small(bound) or self.small_local(bound, scope)):
                    return True
        return False

    def small_local(self, expr: ast.AST, scope: _Scope) -> bool:
        """A name an enclosing function binds only to small int constants (fla's ``cache_size = 4``)."""
        if not isinstance(expr, ast.Name):
            return False
        values = self.values_of(expr.id, scope)
        return bool(values) and all(v is not None and self.small(v) for v in values)

    @staticmethod
    def _sized(expr: ast.AST, same: Callable[[ast.AST], bool]) -> bool:
        return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "len" and \
            len(expr.args) == 1 and same(expr.args[0])

    def small_count(self, node: ast.AugAssign, target: ast.AST, scope: _Scope) -> bool:
        """``state += c`` under ``if state < N`` (N at most MAX_BOUNDED): a count that stops at N (warn 3 times)."""
        key = _chain_key(target)
        for branch, in_body in _conditions(node, scope.fn, self.parents):
            for test in _conjuncts(branch.test) if in_body and isinstance(branch, ast.If) else ():
                if isinstance(test, ast.Compare) and len(test.ops) == 1 and \
                        isinstance(test.ops[0], ast.Lt | ast.LtE) and _chain_key(test.left) == key and \
                        _plain_chain(test.left) and self.small(test.comparators[0]) and \
                        isinstance(node.op, ast.Add) and (_int(node.value) or 0) >= 1:
                    return True
        return False

    def saturating(self, node: ast.AST, target: ast.AST, value: ast.AST | None, scope: _Scope) -> bool:
        """Grown only to what the call needs: under ``while <state> < need:`` (any growth), or under ``if <state> <
        need:`` with the value ``max(need, ...)`` or a call with that first (``torch.empty(max(need, 2 * n))``), so
        that once written the guard stays closed until a call needs more. ``<state>`` is the state itself, its
        ``len()`` or a method of it (``.numel()``); ``need`` reads nothing of it."""
        key = _chain_key(target)
        same = lambda e: _chain_key(e) == key and _plain_chain(e)  # noqa: E731
        itself = lambda e: same(e) or self._sized(e, same) or (  # noqa: E731
            isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and same(e.func.value))
        reads = lambda e: any(_chain_key(n) == key for n in ast.walk(e)  # noqa: E731
                              if isinstance(n, ast.Attribute | ast.Name | ast.Subscript))
        needs: list[ast.expr] = []
        for branch, in_body in _conditions(node, scope.fn, self.parents):
            if not in_body:
                continue
            for test in _conjuncts(branch.test) if isinstance(branch.test, ast.BoolOp) and \
                    isinstance(branch.test.op, ast.And) else [t for t in ast.walk(branch.test)]:
                if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
                    continue
                op, left, right = test.ops[0], test.left, test.comparators[0]
                if isinstance(op, ast.Lt | ast.LtE) and itself(left) and not reads(right):
                    need = right
                elif isinstance(op, ast.Gt | ast.GtE) and itself(right) and not reads(left):
                    need = left
                else:
                    continue
                if isinstance(branch, ast.While):  # grows until it fits, within this call (no way out but the test)
                    return not any(isinstance(n, ast.Break | ast.Return) for n in ast.walk(branch))
                needs.append(need)
        dumps = {ast.dump(n) for n in needs}
        size = value.args[0] if isinstance(value, ast.Call) and value.args and not (
            isinstance(value.func, ast.Name) and value.func.id == "max") else value
        return isinstance(size, ast.Call) and isinstance(size.func, ast.Name) and size.func.id == "max" and any(
            ast.dump(a) in dumps for a in size.args)

    def unconditional(self, node: ast.AST, scope: _Scope) -> bool:
        """No ``if``/``while`` around ``node`` tests state (a cycle advanced only at another's phase counts on)."""
        return not any(_state(self.all(branch.test, scope)) for branch, _ in _conditions(node, scope.fn, self.parents))

    def cycle_period(self, target: ast.AST, value: ast.AST | None) -> int | None:
        """``(state + k) % N``, ``1 - state``, ``state ^ 1``, ``not state`` on the written state itself: at most
        MAX_BOUNDED integer phases (the number, else None)."""
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
            return 2 if self._itself(value.operand, target) else None
        if not isinstance(value, ast.BinOp):
            return None
        if isinstance(value.op, ast.Mod):
            step = value.left
            cycle = isinstance(step, ast.BinOp) and isinstance(step.op, ast.Add) and \
                self._itself(step.left, target) and _int(step.right) is not None and self.small(value.right) and \
                (_int(value.right) or 0) != 1  # fmt: skip
            return max(n or 0 for n in self.int_values(value.right)) if cycle else None
        if isinstance(value.op, ast.BitXor):
            return 2 if _int(value.right) == 1 and self._itself(value.left, target) else None
        cycle = isinstance(value.op, ast.Sub) and _int(value.left) in (0, 1) and self._itself(value.right, target)
        return 2 if cycle else None

    @staticmethod
    def _itself(expr: ast.AST, target: ast.AST) -> bool:
        return _plain_chain(expr) and _chain_key(expr) == _chain_key(target)


def check_call_state(tree: ast.Module, model: ModuleModel, path: Iterable[str], report: Report) -> None:
    """Report every update of state kept across calls that counts them (module doc)."""
    analysis = _Analysis(tree, model, path)
    writes = [(fn, w) for fn in analysis.functions for w in analysis.writes_in(fn)]
    same: dict[Key, set[Key]] = {}  # state -> state that is the same object (stored as it was read)
    for _, write in writes:
        for key in write.keys:
            for other in write.aliases:
                same.setdefault(key, set()).add(other)
                same.setdefault(other, set()).add(key)
    for _, write in writes:  # a change made through one name is made to every name holding the object
        if not write.rebinds:
            write.keys = frozenset(_reachable(write.keys, same))
    # cycles read together count together: phases of 61, 62 and 63 make a count to 238,266
    periods: dict[Key, int] = {}
    for _, write in writes:
        for key in write.keys if write.period else ():
            periods[key] = max(periods.get(key, 0), write.period)
    if math.prod(periods.values()) > MAX_BOUNDED:
        for _, write in writes:
            if write.period:
                write.bounded, write.always = False, True
    sources: dict[Key, set[Key]] = {}  # state -> the state its writes are computed from or hand on
    setter_of = {id(fn): name for name, fns in analysis.setters.items() for fn in fns}
    for fn, write in writes:
        for key in write.keys:
            sources.setdefault(key, set()).update(write.computed | write.aliases)
            if id(fn) in setter_of:  # what a property's setter stores is what was assigned to the property
                sources[key].add(("attr", setter_of[id(fn)]))
    reported: set[int] = set()
    for fn, write in writes:
        if id(write.node) in reported or not (write.anywhere or analysis.reported_in(fn)):
            continue
        if id(fn) not in analysis.per_call and not write.strong and not write.anywhere:
            continue  # a closure off the forward path (fla's tensor cache): only what counts whatever it is
        if write.always or not write.bounded and write.keys & _reachable(write.computed, sources):
            reported.add(id(write.node))
            text = ast.unparse(write.node).split("\n", 1)[0][:70]
            report(RULE, write.node, f"`{text}` updates state kept across calls from its earlier value (a count of "
                   f"calls, an accumulator, a container grown or used up): {_WHY}")
    for fn in analysis.functions:
        if not analysis.reported_in(fn):
            continue
        for node in _own_nodes(fn):
            used = _chain_key(node) if isinstance(node, ast.Attribute | ast.Name) else None
            loaded = isinstance(getattr(node, "ctx", None), ast.Load)
            if used in analysis.iterators and loaded and id(node) not in reported:
                if isinstance(node, ast.Name) and node.id in analysis.scope(fn).locals:
                    continue
                reported.add(id(node))
                report(RULE, node, f"`{ast.unparse(node)[:60]}` is an iterator kept across calls (each use moves it "
                       f"on: a count of calls): {_WHY}")


def _reachable(start: Iterable[Key], graph: dict[Key, set[Key]]) -> set[Key]:
    """The keys ``start`` holds and, transitively, those ``graph`` links them to."""
    seen = set(start)
    stack = list(seen)
    while stack:
        for key in graph.get(stack.pop(), ()):
            if key not in seen:
                seen.add(key)
                stack.append(key)
    return seen
