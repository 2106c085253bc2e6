"""State a candidate keeps across calls and updates from its own earlier value: a count of calls.

A kernel that is right for its first K calls and wrong afterwards (``self.calls += 1`` and ``eps`` dropped from
call 5001 on) passes every verifier process that makes fewer than K calls, and the verifier's processes make a few
hundred at most; any fixed number is outlasted by a larger K. What every such latch needs is state that survives a
call and is computed from its own earlier value: a counter, an accumulator, a container that grows or is used up,
an iterator moved on, a cached function's hit count. Honest kernels keep state too, but as caches: a buffer made
once, a launch configuration or a compiled kernel keyed by a shape, a warn-once flag, the largest size seen, each
written from the call's arguments and constants, never computed from what it held before.

In every function of the module (closures, lambdas and ``__init__`` included: a factory's closure is called from
the forward path through a name no call graph follows), this reports:

* an augmented assignment (``+=``, ``|=``, ...) to state that outlives the call: an attribute (``self.n``,
  ``Cls.n``), an item of a container that is not a fresh local (``self.d[k]``, ``COUNTS[0]``, a mutable default
  argument's), a ``global``/``nonlocal`` name, a closure's variable; ``+=``/``|=`` of a container on a local that
  holds such state (``log = self.log; log += [0]``);
* any other write to such state computed from state whose writes are computed from it in turn (``self.n = self.n
  + 1``; ``self.a = self.b + 1`` with ``self.b = self.a``; through locals, through aliases made anywhere,
  ``self.view = self.state``; through the module's functions, ``self.n = bump(self)``). Storing an object back as
  it was read (``self.d[k] = self.d.get(k)``), the largest or smallest value seen (``max(self.m, n)``) and a
  cycle of at most MAX_BOUNDED states (``(self.i + 1) % 2``, ``1 - self.i``: every phase is observed) are no count;
* a container grown (``append``, ``extend``, ``insert``, ``appendleft``, ``extendleft``, a slice store of a list)
  or used up (``pop()``/``popleft()`` without a key, ``rotate``, ``del c[0]``), unless a guard bounds it: the value
  is added only when absent (``if v not in c``), only while empty (``if not c``) or below MAX_BOUNDED items, an item
  is removed only when there are more than a constant (an LRU's eviction), or the container is a
  ``deque(maxlen=N)`` with N at most MAX_BOUNDED (fla's tensor cache);
* mutating methods taken as values (``push = self.log.append``), ``next`` as a value or on kept state,
  ``operator.iadd``/``setitem``-style calls on kept state, ``cache_info()``;
* any use, in a function, of state the module binds to an iterator (``iter``, ``map``, ``zip``, a generator,
  ``itertools.count``, a ``collections.Counter``), or of a function of the module that returns one.

* on the forward path, a container keyed by (or added) an object made with an identity of its own
  (``self.seen[object()] = 1``, an instance of the module's class, a lambda): it grows at every call, and ``len()``
  reads the count (elsewhere, a registration made once, ``TABLE.add(Plan())`` in a decorator, is fine).

State is matched by name (every ``.n`` is one ``n``; attributes of a method's other parameters, the call's inputs,
and of autograd's ``ctx`` are not state), which errs towards reporting. Known gap: a count kept on the device (a
kernel incrementing a persistent buffer). Pure function over the AST.
"""

from __future__ import annotations

import ast
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
CONSUMING = frozenset({"pop", "popleft", "popitem", "rotate"})  # without a key: the next item, whatever it is
CHANGING = frozenset({"add", "update", "setdefault", "remove", "discard", "clear", "__setitem__", "put",
                      "put_nowait", "sort", "reverse", "move_to_end"})  # reported where computed from themselves
COUNTERS = frozenset({"cache_info"})
MUTATING_OPERATORS = frozenset({"operator.iadd", "operator.iconcat", "operator.ior", "operator.iand", "operator.ixor",
                                "operator.isub", "operator.imul", "operator.setitem", "operator.delitem"})
_ITERATOR_BUILTINS = frozenset({"iter", "map", "filter", "zip", "enumerate", "reversed"})
_ITERATOR_FACTORIES = frozenset({"itertools.count", "itertools.cycle", "itertools.repeat", "collections.Counter"})
_LOOKUPS = frozenset({"get", "setdefault", "pop"})  # with a key: hand on the object a container holds
_SELECTORS = frozenset({"max", "min"})  # hand on one of their arguments
_CONTAINER_BUILTINS = frozenset({"list", "tuple", "set", "frozenset", "dict", "sorted"})  # new, holding the items
_VALUE_BUILTINS = frozenset({"len", "int", "float", "str", "bool", "range", "abs", "round", "divmod", "isinstance",
                             "hasattr", "callable", "repr", "format", "bytearray"})
_WHY = ("a kernel's result must not depend on how many times it ran: remove it; keep per-call values in locals and "
        "state across calls only as caches written from the call's arguments (a buffer per shape)")
_EMPTY: frozenset[Key] = frozenset()
# flows from an object made with an identity of its own (object(), an instance of the module's class, a lambda): a key
# no earlier call made, so a container keyed by it grows at every call
FRESH: Key = ("fresh", "identity")


@dataclass
class _Scope:
    """One function's bindings and, for each local, the state it may hold and the state it was computed from."""

    fn: Scoped
    outer: _Scope | None
    per_call: bool  # its locals are made afresh at every call of forward (it is forward or runs inside it)
    instance: str | None = None  # a method's first parameter
    context: str | None = None  # an autograd Function's ctx: an object made for each call
    params: set[str] = field(default_factory=set)
    declared: set[str] = field(default_factory=set)  # global / nonlocal
    locals: set[str] = field(default_factory=set)
    holds: dict[str, set[Key]] = field(default_factory=dict)
    derived: dict[str, set[Key]] = field(default_factory=dict)


@dataclass
class _Write:
    node: ast.AST
    keys: frozenset[Key]  # the state it changes
    computed: frozenset[Key]  # the state its value is computed from
    always: bool  # reported whatever it reads (+=, growth, next, ...)
    bounded: bool = False  # a cycle of at most MAX_BOUNDED phases
    aliases: frozenset[Key] = frozenset()  # the state its value is, as it was read (self.view = self.state)


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


def _bindings(node: ast.AST, parents: dict[int, ast.AST]) -> Iterator[tuple[ast.AST, ast.AST | None]]:
    """(target, value read into it) of every binding statement or expression; a ``match`` capture binds (part of)
    the subject."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            yield target, node.value
    elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
        yield node.target, node.value
    elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
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


class _Analysis:
    def __init__(self, tree: ast.Module, model: ModuleModel, path: Iterable[str]):
        self.tree, self.model = tree, model
        self.parents = model.parents
        on_path = [model.functions[k] for k in path if k in model.functions]
        decorators = {d.id for n in ast.walk(tree)
                      if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                      for d in (x.func if isinstance(x, ast.Call) else x for x in n.decorator_list)
                      if isinstance(d, ast.Name)}
        # functions whose locals are made afresh at every call of forward: those it runs, but not a decorator (it runs
        # once, where the function it decorates is defined: what its closure keeps lives on)
        self.per_call = {id(n) for fn in on_path for n in ast.walk(fn) if isinstance(n, Scoped)
                         and not (isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name in decorators)}
        self.contexts = {id(f) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and c.name in
                         model.autograd_functions for f in c.body if isinstance(f, ast.FunctionDef |
                                                                                ast.AsyncFunctionDef)
                         and f.name in ("forward", "backward", "setup_context", "jvp", "vjp")}
        self.methods = {id(f) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for f in c.body
                        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                        and not any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in f.decorator_list)}
        self.scopes: dict[int, _Scope] = {}
        self.fn_reads: dict[int, frozenset[Key]] = {}
        self.named: dict[tuple[str, str], frozenset[Key]] = {}
        self.module_values: dict[str, list[ast.AST | None]] = {}  # module-level names, `global` writes included
        for node in ast.walk(tree):
            for target, value in _bindings(node, self.parents):
                if isinstance(target, ast.Name) and self._module_level(target.id, node):
                    self.module_values.setdefault(target.id, []).append(value)
        self.functions = [n for n in ast.walk(tree) if isinstance(n, Scoped)]
        self.generators = {n.name for n in self.functions if isinstance(n, ast.FunctionDef)
                           and any(isinstance(x, ast.Yield | ast.YieldFrom) for x in _own_nodes(n))}

    def _module_level(self, name: str, node: ast.AST) -> bool:
        fn = self.enclosing(node)
        return fn is None or name in self.scope(fn).declared

    def enclosing(self, node: ast.AST) -> Scoped | None:
        parent = self.parents.get(id(node))
        while parent is not None and not isinstance(parent, Scoped):
            parent = self.parents.get(id(parent))
        return parent

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
            held, computed = self.flow(default, outer) if outer else self.flow(default, None)
            scope.holds[arg.arg] = {*held, *computed, ("name", f"{getattr(fn, 'name', 'lambda')}.{arg.arg}")}
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
        return scope

    def name_flow(self, name: str, scope: _Scope | None) -> Flow:
        """What a name read in ``scope`` may hold: a local's values, a parameter's default, an enclosing function's
        local (kept across calls unless that function runs at every call and made it there), else a module name."""
        if scope is None:
            return frozenset({("name", name)}), _EMPTY
        if name in scope.locals:
            return frozenset(scope.holds.get(name, ())), frozenset(scope.derived.get(name, ()))
        if name in scope.params:  # the object itself (self, state a caller hands in), and what a default holds
            return frozenset({*scope.holds.get(name, ()), ("param", f"{id(scope.fn)}.{name}")}), _EMPTY
        if name in scope.declared or scope.outer is None:
            return frozenset({("name", name)}), _EMPTY
        held, computed = self.name_flow(name, scope.outer)
        if name in scope.outer.locals and not (scope.outer.per_call and not held):
            held = held | {("name", name)}
        return held, computed

    def persistent_name(self, name: str, scope: _Scope) -> bool:
        """Whether the object a name is bound to outlives a call of forward."""
        if name in scope.locals:
            return bool(scope.holds.get(name))
        if name in scope.params:  # self, a mutable default, or state a caller hands in; not autograd's ctx
            return name != scope.context
        return bool(self.name_flow(name, scope)[0])

    def flow(self, expr: ast.AST | None, scope: _Scope | None) -> Flow:
        """(the state ``expr``'s value may be, the state it was computed from)."""
        if expr is None or isinstance(expr, ast.Constant):
            return _EMPTY, _EMPTY
        if isinstance(expr, ast.Lambda):
            return _EMPTY, frozenset({FRESH})
        if isinstance(expr, ast.Name):
            return self.name_flow(expr.id, scope)
        if isinstance(expr, ast.Attribute) or const_getattr(expr) is not None:
            base, attr = (expr.value, expr.attr) if isinstance(expr, ast.Attribute) else const_getattr(expr)  # type: ignore[misc]
            held, computed = self.flow(base, scope)
            if isinstance(base, ast.Name) and scope is not None and base.id in scope.params:
                if base.id == scope.context:
                    return _EMPTY, computed  # ctx.x: what this call's forward left for its backward
                if base.id != scope.instance and scope.instance is not None and not scope.holds.get(base.id):
                    return _EMPTY, computed  # an attribute of a method's input (x.shape) is the call's, not state
                return frozenset({("attr", attr)}), computed  # self.n is an object of its own, not self
            if isinstance(base, ast.Name) and scope is not None and base.id in scope.locals and not held:
                return _EMPTY, computed  # an attribute of an object made in this call
            return held | {("attr", attr)}, computed
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
        if isinstance(expr, ast.Tuple | ast.List | ast.Set | ast.Dict | ast.BinOp | ast.ListComp | ast.SetComp
                      | ast.GeneratorExp | ast.DictComp):
            parts = [self.flow(c, scope) for c in ast.iter_child_nodes(expr) if isinstance(c, ast.expr)]
            held = frozenset().union(*(h for h, _ in parts))  # a new container may hold state
            return held, frozenset().union(*(h | c for h, c in parts))
        return _EMPTY, self.all_children(expr, scope)

    def call_flow(self, call: ast.Call, scope: _Scope | None) -> Flow:
        func = call.func
        args = [*call.args, *(k.value for k in call.keywords)]
        if isinstance(func, ast.Attribute) and func.attr in _LOOKUPS and call.args and not call.keywords:
            held, computed = self.flow(func.value, scope)
            return held, computed.union(*(self.all(a, scope) for a in args))
        name = func.id if isinstance(func, ast.Name) else None
        if name in _SELECTORS:
            return self.union(*(self.flow(a, scope) for a in args))
        if name in _CONTAINER_BUILTINS:
            parts = [self.flow(a, scope) for a in args]
            return frozenset().union(*(h for h, _ in parts)), frozenset().union(*(h | c for h, c in parts))
        computed = frozenset().union(*(self.all(a, scope) for a in args))
        if name == "object" or name in self.model.classes:
            return _EMPTY, computed | {FRESH}
        if name in _VALUE_BUILTINS:
            return _EMPTY, computed
        receiver = func.value if isinstance(func, ast.Attribute) else None
        local_def = self.local_def(name, scope) if name else None
        reads = self.function_reads(local_def) if local_def is not None else self.called_reads(func)
        computed = computed | self.all(receiver, scope) | reads
        return reads, computed  # what a function of the module reads, it may return

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

    def called_reads(self, func: ast.AST) -> frozenset[Key]:
        """What the module's functions ``func`` may name read (``f(...)``; ``x.f(...)`` for any method f)."""
        if isinstance(func, ast.Name):
            named = ("fn", func.id)
        elif isinstance(func, ast.Attribute):
            named = ("method", func.attr)
        else:
            return _EMPTY
        if named not in self.named:
            self.named[named] = _EMPTY  # a recursive call adds nothing new
            kind, name = named
            targets = [f for k, f in self.model.functions.items()
                       if (k if kind == "fn" else k.rsplit(".", 1)[-1]) == name]
            self.named[named] = frozenset().union(*(self.function_reads(fn) for fn in targets))
        return self.named[named]

    def function_reads(self, fn: ast.AST) -> frozenset[Key]:
        """Every state key a function, its closures and what they call read: what its result may carry."""
        if id(fn) not in self.fn_reads:
            self.fn_reads[id(fn)] = _EMPTY
            keys: set[Key] = set()
            for inner in ast.walk(fn):
                if isinstance(inner, Scoped):
                    scope = self.scope(inner)
                    for node in _own_nodes(inner):
                        if isinstance(node, ast.expr):
                            keys |= self.all(node, scope)
            self.fn_reads[id(fn)] = frozenset(keys - {FRESH})  # a lambda it sorts with is not what it returns
        return self.fn_reads[id(fn)]

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
            if name in scope.declared:
                break
            scope = scope.outer
        return self.module_values.get(name, [None])

    def is_bounded_deque(self, value: ast.AST | None) -> bool:
        if not (isinstance(value, ast.Call) and resolve(value.func, self.model.aliases) == "collections.deque"):
            return False
        maxlen = next((k.value for k in value.keywords if k.arg == "maxlen"),
                      value.args[1] if len(value.args) > 1 else None)
        return maxlen is not None and all(n is not None and 0 <= n <= MAX_BOUNDED for n in self.int_values(maxlen))

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
        """Whether a value is, or holds, an iterator (or a Counter): iter/map/zip/..., a generator (expression or
        function), itertools.count/cycle/repeat, or a module function that returns one."""
        if value is None:
            return False
        if isinstance(value, ast.GeneratorExp):
            return True
        if isinstance(value, ast.Tuple | ast.List | ast.Set | ast.Dict):
            return any(self.makes_iterator(v, seen) for v in ast.iter_child_nodes(value) if isinstance(v, ast.expr))
        if not isinstance(value, ast.Call):
            return any(isinstance(n, ast.Call) and resolve(n.func, self.model.aliases) in _ITERATOR_FACTORIES
                       for n in ast.walk(value))
        name = resolve(value.func, self.model.aliases) or (value.func.id if isinstance(value.func, ast.Name) else "")
        if name in _ITERATOR_BUILTINS or name in _ITERATOR_FACTORIES or name in self.generators:
            return True
        if any(isinstance(n, ast.Call) and resolve(n.func, self.model.aliases) in _ITERATOR_FACTORIES
               for n in ast.walk(value)):
            return True
        fn = self.model.functions.get(name)
        if fn is None or name in seen or isinstance(fn, ast.Lambda):
            return False
        return any(isinstance(n, ast.Return) and self.makes_iterator(n.value, seen | {name}) for n in _own_nodes(fn))

    def iterator_keys(self) -> set[Key]:
        keys: set[Key] = set()
        for node in ast.walk(self.tree):
            for target, value in _bindings(node, self.parents):
                if self.makes_iterator(value):
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
        root = _root(target)
        if isinstance(root, ast.Name):
            if not self.persistent_name(root.id, scope):
                return None
            held = self.name_flow(root.id, scope)[0]
        else:
            held = self.flow(root, scope)[0]
            if not held and (not isinstance(root, ast.Call) or self.fresh_call(root)):
                return None
        if isinstance(target, ast.Attribute):  # the attribute's slot, and the object it belongs to unless a parameter
            held_by_base = self.flow(target.value, scope)[0]
            return frozenset({("attr", target.attr), *(k for k in held_by_base if k[0] != "param")})
        return frozenset(self.flow(target.value, scope)[0]) or frozenset({("name", getattr(root, "id", "?"))})

    def fresh_call(self, call: ast.Call) -> bool:
        """A call that makes a new object (a builtin container or value, a torch or triton function's result); any
        other call may return one that lives on (``type(self)``, a helper's cache)."""
        name = resolve(call.func, self.model.aliases) or (call.func.id if isinstance(call.func, ast.Name) else "")
        return name in _VALUE_BUILTINS | _CONTAINER_BUILTINS or name.split(".", 1)[0] in ("torch", "triton", "math")

    def writes(self) -> list[_Write]:
        found: list[_Write] = []
        for fn in self.functions:
            found.extend(self._writes_in(fn))
        return found

    def _writes_in(self, fn: Scoped) -> Iterator[_Write]:
        scope = self.scope(fn)
        for node in _own_nodes(fn):
            for target, value in _bindings(node, self.parents):
                for part in _store_targets(target):
                    yield from self._store(node, part, value, scope)
            if isinstance(node, ast.Delete):
                for target in node.targets:
                    keys = self.target_keys(target, scope)
                    if keys and isinstance(target, ast.Subscript) and not self.guarded(node, target.value, scope):
                        index = target.slice
                        fixed = _int(index) is not None or isinstance(index, ast.Slice) or \
                            isinstance(index, ast.UnaryOp) and _int(index.operand) is not None
                        yield _Write(node, keys, self.all(index, scope), always=fixed)
            if isinstance(node, ast.Attribute) and node.attr in GROWING | CONSUMING | CHANGING and not (
                    isinstance(parent := self.parents.get(id(node)), ast.Call) and parent.func is node):
                keys = self.container_keys(node.value, scope)
                if keys:  # a mutating method taken as a value: called where nothing follows it
                    yield _Write(node, keys, _EMPTY, always=True)
            if isinstance(node, ast.Name) and node.id == "next" and isinstance(node.ctx, ast.Load) and not (
                    isinstance(parent := self.parents.get(id(node)), ast.Call) and parent.func is node):
                yield _Write(node, frozenset({("name", "next")}), _EMPTY, always=True)
            if isinstance(node, ast.Call):
                yield from self._call(node, scope)

    def container_keys(self, container: ast.AST, scope: _Scope) -> frozenset[Key] | None:
        """The state a container expression is, where it outlives the call (None for a fresh one)."""
        if isinstance(container, ast.Call) and isinstance(container.func, ast.Attribute) and \
                container.func.attr in _LOOKUPS:  # self.d.setdefault(k, []).append(...)
            return self.container_keys(container.func.value, scope)
        if isinstance(container, ast.Name):
            if not self.persistent_name(container.id, scope):
                return None
            held = self.name_flow(container.id, scope)[0]
            return held or frozenset({("name", container.id)})
        return self.target_keys(container, scope) if isinstance(container, ast.Attribute | ast.Subscript) else (
            self.flow(container, scope)[0] or None)

    def _store(self, node: ast.AST, part: ast.AST, value: ast.AST | None, scope: _Scope) -> Iterator[_Write]:
        if isinstance(node, ast.AugAssign) and isinstance(part, ast.Name) and part.id not in scope.declared:
            grows = isinstance(node.value, ast.List | ast.Tuple | ast.Set | ast.Dict | ast.ListComp | ast.SetComp
                               | ast.DictComp) or isinstance(node.op, ast.BitOr) or (
                isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                and node.value.func.id in _CONTAINER_BUILTINS)
            if grows and self.persistent_name(part.id, scope):  # log = self.log; log += [0] grows self.log
                yield _Write(node, self.name_flow(part.id, scope)[0] or frozenset({("name", part.id)}), _EMPTY, True)
            return
        keys = self.target_keys(part, scope)
        if not keys:
            return
        if isinstance(node, ast.AugAssign):
            yield _Write(node, keys, _EMPTY, always=True)
            return
        index = part.slice if isinstance(part, ast.Subscript) else None
        if isinstance(part, ast.Subscript) and isinstance(index, ast.Slice) and \
                isinstance(value, ast.List | ast.Tuple | ast.ListComp) and not self.guarded(node, part.value, scope):
            yield _Write(node, keys, _EMPTY, always=True)  # self.log[n:] = [0] grows it
            return
        held, computed = self.flow(value, scope)
        passed = isinstance(value, ast.Name | ast.Attribute | ast.Subscript | ast.IfExp | ast.BoolOp) or (
            isinstance(value, ast.Call) and (const_getattr(value) is not None or isinstance(value.func, ast.Attribute)
                                             and value.func.attr in _LOOKUPS))
        if scope.per_call and index is not None and FRESH in self.all(index, scope):  # self.seen[object()] = 1
            yield _Write(node, keys, _EMPTY, always=True)
            return
        bounded = _bounded_cycle(value) or self.saturating(node, part, value, scope)
        yield _Write(node, keys, computed | self.all(index, scope), always=False, bounded=bounded,
                     aliases=frozenset(k for k in held if k[0] != "param") if passed else _EMPTY)

    def _call(self, call: ast.Call, scope: _Scope) -> Iterator[_Write]:
        func = call.func
        name = resolve(func, self.model.aliases)
        if name in MUTATING_OPERATORS and call.args:
            keys = self.container_keys(call.args[0], scope)
            if keys:
                yield _Write(call, keys, _EMPTY, always=True)
            return
        if isinstance(func, ast.Name) and func.id == "next" and call.args:
            keys = self.container_keys(call.args[0], scope)
            if keys:
                yield _Write(call, keys, _EMPTY, always=True)
            return
        if not isinstance(func, ast.Attribute):
            return
        if func.attr in COUNTERS:
            yield _Write(call, frozenset({("attr", func.attr)}), _EMPTY, always=True)
            return
        if func.attr not in GROWING | CONSUMING | CHANGING:
            return
        keys = self.container_keys(func.value, scope)
        if not keys:
            return
        args = [*call.args, *(k.value for k in call.keywords)]
        if func.attr in GROWING:
            always = not (self.bounded_deque(func.value, scope) or self.guarded(call, func.value, scope, args))
        elif func.attr in CONSUMING:
            always = (func.attr == "rotate" or not call.args) and not self.guarded(call, func.value, scope)
        else:  # add/update/setdefault: a count only when what it adds is new at every call
            always = scope.per_call and any(FRESH in self.all(a, scope) for a in args)
        yield _Write(call, keys, frozenset().union(*(self.flow(a, scope)[1] for a in args)), always)

    def saturating(self, node: ast.AST, target: ast.AST, value: ast.AST | None, scope: _Scope) -> bool:
        """Grown only to what the call needs: under ``if <state> < need:`` (``need > <state>``, ``<state>.numel() <
        need``), the value ``max(need, ...)`` or a call with that as its first argument (``torch.empty(max(need,
        2 * n))``), so that once written the guard stays closed until a call needs more (a workspace doubled to
        fit). ``need`` reads nothing of the state written."""
        key = _chain_key(target)
        reads_state = lambda e: any(_chain_key(n) == key for n in ast.walk(e)  # noqa: E731
                                    if isinstance(n, ast.Attribute | ast.Name | ast.Subscript))
        needs = []
        parent = self.parents.get(id(node))
        while parent is not None and parent is not scope.fn:
            if isinstance(parent, ast.If) and _in_body(node, parent, self.parents):
                for test in ast.walk(parent.test):
                    if isinstance(test, ast.Compare) and len(test.ops) == 1:
                        op, left, right = test.ops[0], test.left, test.comparators[0]
                        if isinstance(op, ast.Lt | ast.LtE) and reads_state(left) and not reads_state(right):
                            needs.append(right)
                        elif isinstance(op, ast.Gt | ast.GtE) and reads_state(right) and not reads_state(left):
                            needs.append(left)
            parent = self.parents.get(id(parent))
        dumps = {ast.dump(n) for n in needs}
        size = value.args[0] if isinstance(value, ast.Call) and value.args and not (
            isinstance(value.func, ast.Name) and value.func.id == "max") else value  # torch.empty(max(need, ...))
        return isinstance(size, ast.Call) and isinstance(size.func, ast.Name) and size.func.id == "max" and any(
            ast.dump(a) in dumps for a in size.args)

    def guarded(self, node: ast.AST, container: ast.AST, scope: _Scope, added: list[ast.expr] | None = None) -> bool:
        """Whether an ``if`` around ``node`` bounds what it does to ``container``: added only when absent, only while
        empty or below MAX_BOUNDED items (``added`` given), removed only past a constant number of items."""
        key = _chain_key(container)
        parent = self.parents.get(id(node))
        while parent is not None and parent is not scope.fn:
            if isinstance(parent, ast.If) and any(self._bounds(t, key, added) for t in _conjuncts(parent.test)):
                return _in_body(node, parent, self.parents)
            parent = self.parents.get(id(parent))
        return False

    def _bounds(self, test: ast.AST, key: Key | None, added: list[ast.expr] | None) -> bool:
        same = lambda e: _chain_key(e) == key  # noqa: E731
        sized = lambda e: isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "len" \
            and len(e.args) == 1 and same(e.args[0])  # noqa: E731
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return added is not None and isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) \
                and same(test.operand)
        op, left, right = test.ops[0], test.left, test.comparators[0]
        if added is not None:
            if isinstance(op, ast.NotIn) and same(right) and any(ast.dump(left) == ast.dump(a) for a in added):
                return True
            limit = _int(right)
            return sized(left) and limit is not None and (
                isinstance(op, ast.Eq) and limit == 0 or isinstance(op, ast.Lt | ast.LtE) and limit <= MAX_BOUNDED)
        return sized(left) and isinstance(op, ast.Gt | ast.GtE) and _int(right) is not None


def _conjuncts(test: ast.AST) -> list[ast.AST]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [c for v in test.values for c in _conjuncts(v)]
    return [test]


def _in_body(node: ast.AST, branch: ast.If, parents: dict[int, ast.AST]) -> bool:
    """Whether ``node`` sits in ``branch``'s body (not its ``else``)."""
    child = node
    while parents.get(id(child)) is not branch:
        child = parents[id(child)]
    return any(child is stmt for stmt in branch.body)


def _bounded_cycle(value: ast.AST | None) -> bool:
    """A value that cycles through at most MAX_BOUNDED phases: ``... % N``, ``1 - x``, ``x ^ 1``, ``not x``."""
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
        return True
    if not isinstance(value, ast.BinOp):
        return False
    if isinstance(value.op, ast.Mod):
        limit = _int(value.right)
        return limit is not None and 0 < limit <= MAX_BOUNDED
    if isinstance(value.op, ast.Sub):
        return _int(value.left) in (0, 1)
    return isinstance(value.op, ast.BitXor) and _int(value.right) == 1


def check_call_state(tree: ast.Module, model: ModuleModel, path: Iterable[str], report: Report) -> None:
    """Report every update of state kept across calls that counts them (module doc)."""
    analysis = _Analysis(tree, model, path)
    writes = analysis.writes()
    same: dict[Key, set[Key]] = {}  # state -> state that is the same object (stored as it was read)
    for write in writes:
        for key in write.keys:
            for other in write.aliases:
                same.setdefault(key, set()).add(other)
                same.setdefault(other, set()).add(key)
    for write in writes:
        write.keys = frozenset(_reachable(write.keys, same))
    computed: dict[Key, set[Key]] = {}  # state -> the state its writes are computed from
    for write in writes:
        for key in write.keys:
            computed.setdefault(key, set()).update(write.computed)
    reported: set[int] = set()
    for write in writes:
        if id(write.node) in reported:
            continue
        if write.always or not write.bounded and write.keys & _reachable(write.computed, computed):
            reported.add(id(write.node))
            text = ast.unparse(write.node).split("\n", 1)[0][:70]
            report(RULE, write.node, f"`{text}` updates state kept across calls from its earlier value (a count of "
                   f"calls, an accumulator, a container grown or used up): {_WHY}")
    iterators = analysis.iterator_keys()
    for fn in analysis.functions:
        for node in _own_nodes(fn):
            used = _chain_key(node) if isinstance(node, ast.Attribute | ast.Name) else None
            if used in iterators and isinstance(getattr(node, "ctx", None), ast.Load) and id(node) not in reported:
                if isinstance(node, ast.Name) and node.id in analysis.scope(fn).locals:
                    continue
                reported.add(id(node))
                report(RULE, node, f"`{ast.unparse(node)[:60]}` is an iterator kept across calls (each use moves it "
                       f"on: a count of calls): {_WHY}")


def _reachable(start: Iterable[Key], computed: dict[Key, set[Key]]) -> set[Key]:
    """The keys ``start`` holds and, transitively, the keys their writes were computed from."""
    seen = set(start)
    stack = list(seen)
    while stack:
        for key in computed.get(stack.pop(), ()):
            if key not in seen:
                seen.add(key)
                stack.append(key)
    return seen
