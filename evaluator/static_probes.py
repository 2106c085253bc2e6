"""Version and capability probes: the ``try`` statements and helpers that only ask what is installed.

Real kernels ask before they choose: ``try: from triton.language.extra import libdevice`` ...
``except ImportError: HAS_LIBDEVICE = False``, ``try: major, _ = torch.cuda.get_device_capability()``
``except RuntimeError: major = 0``. Such a ``try`` cannot hide a fallback computation: its body only
imports or queries (versions, device properties, ``find_spec``, helpers that only query), its handlers only
bind flags, constants or probe values computed before the ``try`` (``except Exception: return device``), log a
message through a logger, or ask again with another such ``try`` (fla's ``get_multiprocessor_count``: "maybe an
NPU", then ``logger.debug(...)`` and ``return 1``). A ``try`` around anything else on the forward path is still a
fallback (``try-fallback``).

Queries are reads of Python values: device and version facts, string and dict methods on them
(``props.name.lower()``, ``TABLE.get(key, default)``), f-strings, ``any(tag in name for tag in (...))``, and
calls of module-level helpers whose own bodies are probes (Liger's ``_infer_nvidia_arch``). Statements after an
import that always fails (a module that is not installed, see ``evaluator.static_optional``) never run.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

from evaluator.static_rules import INERT_PROBES, PROBE_CALLS, PROBE_OWNERS
from evaluator.static_uses import binding_sites

Resolve = Callable[[ast.AST], "str | None"]
Predicate = Callable[[ast.AST], bool]

# Namespaces whose calls and attributes are probes: versions, device properties, installed packages.
_PROBE_NAMESPACES = ("torch.cuda", "torch.xpu", "torch.mps", "torch.mtia", "torch.cpu", "torch.accelerator",
                     "torch.npu", "torch.backends", "torch.version", "importlib.util", "importlib.metadata",
                     "packaging.version", "sys.version_info", "sys.platform", "platform")  # fmt: skip
_CONVERSIONS = frozenset({"int", "str", "float", "bool", "tuple", "len", "max", "min", "getattr", "hasattr", "any",
                          "all", "isinstance"})  # fmt: skip
# Methods of the plain Python values probes return (strings, dicts, version tuples): pure reads.
_VALUE_METHODS = frozenset({"get", "split", "lower", "upper", "strip", "startswith", "endswith", "replace",
                            "format"})  # fmt: skip
# A logger's message methods (evaluator.static_loggers keeps loggers to those).
LOG_METHODS = frozenset({"debug", "info", "warning", "error", "exception", "critical"})
# Decorators that do not change what a helper does when called (so a probe helper stays a probe).
_INERT_DECORATORS = frozenset({"functools.cache", "functools.lru_cache"})


def is_constant(node: ast.AST) -> bool:
    """A literal value (numbers, strings, None, booleans) or a tuple/list/set of them."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return all(is_constant(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.Not):
        return is_constant(node.operand)
    return False


def _probe_name(dotted: str | None) -> bool:
    if dotted is None:
        return False
    if dotted.endswith(".__version__") or dotted in ("torch.version", "triton.__version__"):
        return True
    if dotted in INERT_PROBES or dotted in PROBE_OWNERS:
        return True
    return any(dotted == ns or dotted.startswith(ns + ".") for ns in _PROBE_NAMESPACES)


def _never(_node: ast.AST) -> bool:
    return False


class Probes:
    """Decides what counts as a probe for one module: ``resolve`` reads dotted names, ``extra_call`` accepts
    further calls (``importlib.import_module`` version probes), ``functions`` are the module-level helpers that
    may be probes themselves, ``fails`` says an import statement always fails."""

    def __init__(self, resolve: Resolve, *, extra_call: Predicate = _never, functions: dict | None = None,
                 fails: Predicate = _never, decorator_name: Resolve = lambda _n: None,
                 parents: dict[int, ast.AST] | None = None, classes: dict | None = None,
                 loggers: frozenset[str] = frozenset()) -> None:  # fmt: skip
        self.resolve, self.extra_call, self.fails = resolve, extra_call, fails
        self.loggers = loggers  # names only ever bound to logging.getLogger(...) (evaluator.static_loggers)
        self.functions = functions or {}
        self.classes = classes or {}
        self.decorator_name = decorator_name
        self.parents = parents or {}
        self._helpers: dict[str, bool] = {}
        self._scopes: list[ast.AST | None] = []  # the function around the try being judged (None: the module)

    def expr(self, node: ast.AST) -> bool:  # noqa: C901 - one case per expression kind
        """An expression that only reads versions, device facts, installed packages or constants."""
        if is_constant(node) or isinstance(node, ast.Name):
            return True  # a name read here is a value computed before the try (or a flag)
        if isinstance(node, ast.Attribute):
            dotted = self.resolve(node)
            if dotted is not None:
                return _probe_name(dotted)
            return node.attr.isidentifier() and not node.attr.startswith("_") and self.expr(node.value)
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.Compare):
            return all(self.expr(n) for n in [node.left, *node.comparators])
        if isinstance(node, ast.BoolOp):
            return all(self.expr(v) for v in node.values)
        if isinstance(node, ast.UnaryOp | ast.BinOp):
            parts = [node.operand] if isinstance(node, ast.UnaryOp) else [node.left, node.right]
            return all(self.expr(p) for p in parts)
        if isinstance(node, ast.IfExp):
            return all(self.expr(p) for p in (node.test, node.body, node.orelse))
        if isinstance(node, ast.Subscript):
            return self.expr(node.value) and self.expr(node.slice)
        if isinstance(node, ast.Tuple | ast.List):
            return all(self.expr(e) for e in node.elts)
        if isinstance(node, ast.JoinedStr):
            return all(self.expr(v) for v in node.values)
        if isinstance(node, ast.FormattedValue):
            return self.expr(node.value) and (node.format_spec is None or self.expr(node.format_spec))
        if isinstance(node, ast.GeneratorExp | ast.ListComp):
            return self.expr(node.elt) and all(
                self.expr(g.iter) and all(self.expr(i) for i in g.ifs) and not g.is_async for g in node.generators)
        return False

    def _call(self, node: ast.Call) -> bool:
        if self.extra_call(node):
            return True
        func = node.func
        args_ok = all(self.expr(a) for a in [*node.args, *(k.value for k in node.keywords)])
        if not args_ok or any(isinstance(a, ast.Starred) for a in node.args):
            return False
        dotted = self.resolve(func)
        if dotted is not None:
            return _probe_name(dotted) and dotted.rsplit(".", 1)[-1] in PROBE_CALLS
        if isinstance(func, ast.Name):
            return func.id in _CONVERSIONS or self._helper(func.id)
        if isinstance(func, ast.Attribute):  # get_device_properties(0).total_memory, Version(v).release, d.get(k)
            return (func.attr in PROBE_CALLS or func.attr in _VALUE_METHODS) and self.expr(func.value)
        return False

    def _helper(self, name: str) -> bool:
        """A module-level function whose body is itself a probe (and whose decorators do not change it)."""
        if name in self._helpers:
            return self._helpers[name]
        fn = self.functions.get(name)
        if not isinstance(fn, ast.FunctionDef):
            return False
        self._helpers[name] = False  # recursion: assume not while deciding
        inert = all(self.decorator_name(d.func if isinstance(d, ast.Call) else d) in _INERT_DECORATORS
                    for d in fn.decorator_list)  # fmt: skip
        defaults = [*fn.args.defaults, *(d for d in fn.args.kw_defaults if d is not None)]
        self._helpers[name] = inert and all(is_constant(d) for d in defaults) and self.statements(fn.body)
        return self._helpers[name]

    def statements(self, body: list[ast.stmt], *, handler: bool = False) -> bool:  # noqa: C901
        """Statements a probe may hold: imports and queries (body) or flags and prior values (handlers)."""
        value_ok = self._handler_value if handler else self.expr
        for stmt in body:
            if isinstance(stmt, ast.Pass | ast.Raise):
                continue
            if isinstance(stmt, ast.Import | ast.ImportFrom):
                if not handler and self.fails(stmt):
                    return True  # it raises ImportError: nothing after it runs
                continue
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue  # a docstring or a bare constant
            if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if _flag_targets(targets) and value_ok(stmt.value):
                    continue
                return False
            if isinstance(stmt, ast.Return):
                if stmt.value is None or value_ok(stmt.value):
                    continue
                return False
            if isinstance(stmt, ast.Expr) and not handler and self.expr(stmt.value):
                continue  # a bare query such as torch.cuda.get_device_properties(0)
            if isinstance(stmt, ast.Expr) and self._log_call(stmt.value):
                continue  # logger.debug("no NPU either", exc_info=True)
            if isinstance(stmt, ast.If) and not handler and self.expr(stmt.test):
                if self.statements(stmt.body) and self.statements(stmt.orelse):
                    continue
                return False
            if isinstance(stmt, ast.Try) and self.try_(stmt):
                continue  # a probe inside a probe's handler only asks again (fla: "maybe an NPU")
            return False
        return True

    def _log_call(self, node: ast.AST) -> bool:
        """``logger.<message method>(...)`` on a name only ever bound to ``logging.getLogger(...)``, its arguments
        constants, names or queries: it writes a message and computes nothing."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id in self.loggers
                and node.func.attr in LOG_METHODS):  # fmt: skip
            return False
        values = [*node.args, *(k.value for k in node.keywords)]
        return all(k.arg is not None for k in node.keywords) and not any(isinstance(a, ast.Starred)
                                                                          for a in node.args) and all(
            self.expr(v) for v in values)

    def _handler_value(self, node: ast.AST) -> bool:
        """What a handler may bind or return: constants, and names of values that are probes themselves (a
        parameter with a constant default, a local only ever bound to a probe: ``except Exception: return
        device``), never an input (``except: out = x``)."""
        if is_constant(node):
            return True
        if isinstance(node, ast.Name):
            return self._probe_local(node.id)
        if isinstance(node, ast.Attribute):
            return self._enum_constant(node)
        return isinstance(node, ast.Tuple | ast.List) and all(self._handler_value(e) for e in node.elts)

    def _enum_constant(self, node: ast.Attribute) -> bool:
        """``Table.MEMBER``, ``Table.MEMBER.value`` or ``.name`` of a module-level Enum of constants, or the same
        through ``cls`` in one of its classmethods (``except KeyError: return cls.DEFAULT.value``): a constant."""
        inner = node.value if node.attr in ("value", "name") else node
        if not (isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name)):
            return False
        table = self._enum_class(inner.value.id)
        members = _constant_members(table) if table is not None else None
        return members is not None and inner.attr in members

    def _enum_class(self, name: str) -> ast.ClassDef | None:
        scope = self._scopes[-1] if self._scopes else None
        table: ast.ClassDef | None = self.classes.get(name)
        if table is not None and isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) and (
                _rebinds(scope, name) or any(a.arg == name for a in ast.walk(scope.args) if isinstance(a, ast.arg))):
            return None  # `Table = other` (or a parameter `Table`) in the function: not the module's class
        if table is None and isinstance(scope, ast.FunctionDef) and scope.args.args and scope.args.args[0].arg == name:
            owner = self.parents.get(id(scope))
            if isinstance(owner, ast.ClassDef) and [ast.unparse(d) for d in scope.decorator_list] == ["classmethod"] \
                    and not _rebinds(scope, name):  # `cls = Other()` in the method: any object's attribute
                table = owner
        if not isinstance(table, ast.ClassDef):
            return None
        if table.keywords or table.decorator_list or len(table.bases) != 1:
            return None
        constants = _constant_members(table) is not None
        if self.resolve(table.bases[0]) not in _ENUM_BASES or self.classes.get(table.name) is not table:
            return None
        return table if constants else None

    def _probe_local(self, name: str) -> bool:
        scope = self._scopes[-1] if self._scopes else None
        if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            return False
        args = scope.args
        positional = [*args.posonlyargs, *args.args]
        defaults = dict(zip([a.arg for a in positional][len(positional) - len(args.defaults):], args.defaults,
                            strict=True))  # fmt: skip
        defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None})
        if name in defaults:
            return is_constant(defaults[name]) and not any(
                isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load) for n in ast.walk(scope))
        if name in {a.arg for a in [*positional, *args.kwonlyargs, args.vararg, args.kwarg] if a is not None}:
            return False
        values = []
        for n in ast.walk(scope):
            if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load):
                parent = self.parents.get(id(n))
                if not (isinstance(parent, ast.Assign) and parent.targets == [n]):
                    return False
                values.append(parent.value)
        return bool(values) and all(self.expr(v) for v in values)

    def _scope(self, node: ast.AST) -> ast.AST | None:
        parent = self.parents.get(id(node))
        while parent is not None and not isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            parent = self.parents.get(id(parent))
        return parent

    def try_(self, node: ast.Try) -> bool:
        """True for a ``try`` that only imports or queries, whose handlers and ``else`` only bind flags/values."""
        if node.finalbody or not node.handlers:
            return False
        if not self.statements(node.body):
            return False
        self._scopes.append(self._scope(node))
        try:
            if not all(self.statements(h.body, handler=True) for h in node.handlers):
                return False
            return self.statements(node.orelse, handler=True)
        finally:
            self._scopes.pop()


_ENUM_BASES = frozenset({"enum.Enum", "enum.IntEnum", "enum.StrEnum"})
_PLAIN_METHOD_DECORATORS = frozenset({"classmethod", "staticmethod"})


def _rebinds(scope: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """``name`` is bound in the function (again, for its first parameter), nested scopes included."""
    if any(isinstance(n, ast.Global | ast.Nonlocal) and name in n.names for n in ast.walk(scope)):
        return True
    params = {id(a) for a in ast.walk(scope.args) if isinstance(a, ast.arg)}
    sites = [n for found, n in binding_sites(scope) if found == name and n is not scope]
    return any(id(n) not in params for n in sites) or sum(id(n) in params for n in sites) > 1


def _constant_members(table: ast.ClassDef) -> frozenset[str] | None:
    """The members of an Enum whose body only binds names to constants (and defines plain methods, which run
    only when called), else None: reading a member runs nothing of the candidate's."""
    members: set[str] = set()
    for stmt in table.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets) and is_constant(
                stmt.value):  # fmt: skip
            members.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
            continue
        if isinstance(stmt, ast.FunctionDef) and all(isinstance(d, ast.Name) and d.id in _PLAIN_METHOD_DECORATORS
                                                     for d in stmt.decorator_list):  # fmt: skip
            continue
        return None
    return frozenset(members)


def _flag_targets(targets: Sequence[ast.expr]) -> bool:
    out = []
    for t in targets:
        out.extend(t.elts if isinstance(t, ast.Tuple | ast.List) else [t])
    return all(isinstance(t, ast.Name) for t in out)


def is_probe_expr(node: ast.AST, resolve: Resolve) -> bool:
    """An expression that only reads versions, device facts, installed packages or constants."""
    return Probes(resolve).expr(node)


def is_probe_try(node: ast.Try, resolve: Resolve) -> bool:
    """True for a ``try`` that only imports or queries, whose handlers and ``else`` only set flags/constants."""
    return Probes(resolve).try_(node)
