"""What a ``@triton.jit`` body may hold: what Triton's compiler compiles.

On a GPU a kernel body is compiled: blocks are values of the device program, and the compiler accepts a small
part of Python (``tl`` operations, the kernel's own jit functions, a few builtins, compile-time arithmetic on
``tl.constexpr`` values). Triton's CPU interpreter instead runs the body as Python, where a block is a host object
backed by a numpy array: anything beyond that part would run on the host, over the block's values, where the kernel
should (its text ``str(block)``, ``float(block)``, lists and comprehensions of values, ``math.exp`` of them, a plain
Python function handed in as a constexpr or kept in a module-level object). A kernel body is therefore judged
against an allow-list of what the compiler would accept:

* names: its own parameters and locals, the file's jit functions, imports (``tl``, ``math``), the compiled
  builtins, and module-level names bound only to immutable values (literals, tuples and arithmetic of them,
  ``tl.constexpr(...)``); never a list, an object, a class or a plain function of the file;
* no store into an attribute or a subscript (memory is written with ``tl.store``);
* no comprehension, lambda, dict or set display, and a list display only as a call's argument (a shape:
  ``tl.zeros([BLOCK_M, BLOCK_N], ...)``);
* an f-string or ``%``/``.format`` of a string only inside ``tl.static_assert``/``device_assert``/``device_print``,
  ``print`` or an ``assert`` (messages);
* calls: ``triton.language`` operations (by import or by a module-level alias each binding of which is one:
  ``if FAST: exp = tldevice.fast_expf`` / ``else: exp = tl.exp``; every import a ``try``/``except`` may bind is
  one), the file's jit functions, methods of its own blocks (``x.to(...)``,
  ``tl.program_id(0).to(...)``), ``range``/``len``/``isinstance``/``getattr``, ``min``/``max`` on two or more
  positional arguments, ``print`` without keywords; ``float``/``int``/``bool``, ``math.*``, ``triton.cdiv`` and
  ``triton.next_power_of_2`` only on compile-time values (literals, immutable module-level names, ``tl.constexpr``
  parameters, a block's ``dtype``/``shape``..., locals computed only from those); a constexpr parameter is never
  called (a launch may hand it any Python function).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from typing import cast

from evaluator.static_model import (
    TRITON_WRAPPERS,
    ModuleModel,
    bound_names,
    build_model,
    chain_root,
    resolve,
    scope_bindings,
    triton_rebind,
)
from kernelevo import pyast

Report = Callable[[str, ast.AST, str], None]

_TRITON_OPS = ("triton.language.",)
_MESSAGE_CALLS = frozenset({"triton.language.static_assert", "triton.language.device_assert",
                            "triton.language.device_print", "triton.language.static_print", "print"})
_COMPILE_TIME_ATTRS = frozenset({"dtype", "shape", "type", "element_ty", "numel", "value", "primitive_bitwidth",
                                 "scalar", "block_shape"})
_CONSTEXPR = "triton.language.constexpr"


def check_kernel_bodies(tree: ast.Module, kernels: list[ast.FunctionDef | ast.AsyncFunctionDef], model: ModuleModel,
                        report: Report) -> None:
    """Report (rule ``cuda-source``) what in each kernel's body Triton's compiler would not compile."""
    jit_names = {fn.name for fn in kernels} | set(model.jit_kernels)
    module_values = _module_values(tree, model)  # once per file: what each module-level name is bound to
    jit_defs = {fn.name: fn for fn in kernels}
    shaped: set[str] = set()  # jit functions that may return a value whose shape the data picked
    shape_params = {fn.name: _shape_params(fn, model) for fn in kernels}
    judges = [_Judge(kernel, model, jit_names, module_values, jit_defs, launched_only(tree, kernel, model), shaped,
                     shape_params) for kernel in kernels]
    changed = True
    while changed:  # a helper returning such a value makes its callers' results so, transitively
        changed = False
        for judge in judges:
            if judge.kernel.name not in shaped and judge.returns_data_shaped():
                shaped.add(judge.kernel.name)
                changed = True
                for other in judges:
                    other.forget_shapes()
    for judge in judges:
        kernel = judge.kernel
        for default in [*kernel.args.defaults, *(d for d in kernel.args.kw_defaults if d is not None)]:
            if not _immutable(default, model, module_values):
                report("cuda-source", default, f"kernel `{kernel.name}` gives a parameter the default "
                       f"`{ast.unparse(default)}`, which is not a literal or an immutable constant (a default object "
                       "reaches the interpreted kernel unchecked): default to a number, string, None or dtype")
        for node in (n for stmt in kernel.body for n in ast.walk(stmt)):  # the body: decorators run on the host
            why = judge.node(node)
            if why:
                report("cuda-source", node, f"kernel `{kernel.name}` {why}; in the CPU interpreter it would run on "
                       "the host, over the block's values: use triton.language operations on blocks")


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) or isinstance(node, ast.JoinedStr)


def _in_message(node: ast.AST, model: ModuleModel) -> bool:
    """``node`` (a formatted string) is itself a message: an argument of a message call or an ``assert``'s message,
    possibly inside other formatted strings or ``+`` of strings, never bound to a name (``(t := f"{x}")``) or handed
    to anything else on the way (the block's text would leave the message)."""
    up = model.parents.get(id(node))
    while isinstance(up, ast.JoinedStr | ast.FormattedValue | ast.BinOp | ast.keyword):
        up = model.parents.get(id(up))
    if isinstance(up, ast.Assert):
        return True
    if isinstance(up, ast.Call):
        target = resolve(up.func, model.aliases) or (up.func.id if isinstance(up.func, ast.Name) else "")
        return target in _MESSAGE_CALLS
    return False


@functools.cache
def _block_methods() -> frozenset[str]:
    """The public methods and attributes of Triton's block and dtype types (``x.to``, ``x.sum``, ``dtype.is_fp32``):
    the only attributes a kernel may call on its own values."""
    try:
        import triton.language as tl
    except ImportError:  # no Triton: nothing is a method of a block
        return frozenset()
    types = [tl.tensor, tl.dtype, getattr(tl, "tensor_descriptor", tl.tensor), getattr(tl, "pointer_type", tl.dtype)]
    return frozenset(n for t in types for n in dir(t) if not n.startswith("_"))


Values = dict[str, list[ast.expr | None]]


_NUMBER_TYPES = frozenset({"float", "int", "bool"})


def _immutable(node: ast.AST, model: ModuleModel, values: Values, seen: frozenset[str] = frozenset()) -> bool:
    """A module-level value that is the same Python value whenever a kernel reads it: a literal, a tuple of them,
    arithmetic on them, an imported name (``tl.float32``, ``math.pi``), ``tl.constexpr(...)`` or ``math.*`` of such
    values, ``float("-inf")`` (the builtin on one literal), or another module-level name bound only to such
    values."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Tuple):
        return all(_immutable(e, model, values, seen) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return _immutable(node.operand, model, values, seen)
    if isinstance(node, ast.IfExp):
        return all(_immutable(n, model, values, seen) for n in (node.test, node.body, node.orelse))
    if isinstance(node, ast.Compare):
        return all(_immutable(n, model, values, seen) for n in (node.left, *node.comparators))
    if isinstance(node, ast.BinOp):
        return _immutable(node.left, model, values, seen) and _immutable(node.right, model, values, seen)
    if isinstance(node, ast.Attribute):
        return resolve(node, model.aliases) is not None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _NUMBER_TYPES and \
            node.func.id not in model.binding_counts:  # float("-inf"): the builtin on a literal
        return len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Constant)
    if isinstance(node, ast.Call):
        target = resolve(node.func, model.aliases) or ""
        return (target == _CONSTEXPR or target.startswith("math.")) and not node.keywords and all(
            _immutable(a, model, values, seen) for a in node.args)
    if isinstance(node, ast.Name):
        return node.id not in seen and _immutable_global(node.id, model, values, seen | {node.id})
    return False


def _immutable_global(name: str, model: ModuleModel, values: Values, seen: frozenset[str] = frozenset()) -> bool:
    """Every binding of ``name`` in the file is a module-level ``name = value`` (in a module-level ``if``/``try``
    too: ``if FLAG: SCALE = 2.0 else: SCALE = 1.0``) of an immutable value."""
    found = values.get(name, [])
    return bool(found) and model.binding_counts.get(name) == len(found) and all(
        v is not None and _immutable(v, model, values, seen) for v in found)


def _module_values(tree: ast.Module, model: ModuleModel) -> Values:
    """The value of each module-scope binding (None where it is not a plain ``name = value``)."""
    values: Values = {}
    for name, site in scope_bindings(tree):
        values.setdefault(name, []).append(_assigned(site, model))
    return values


def _assigned(site: ast.AST, model: ModuleModel) -> ast.expr | None:
    """The value a plain ``name = value`` (or ``name: T = value``) binds at ``site``; None for any other binding."""
    up = model.parents.get(id(site))
    if isinstance(up, ast.Assign) and site in up.targets or isinstance(up, ast.AnnAssign) and up.target is site:
        return up.value
    return None


def _import_paths(node: ast.AST, model: ModuleModel) -> list[str]:
    """Every dotted path ``node`` may stand for: the one :func:`resolve` reads, and the same path from each other
    import of its root name (``try: from triton.language.extra.libdevice import tanh`` / ``except ImportError:
    from math import tanh`` binds math.tanh when the first import fails); none when it resolves to nothing."""
    target = resolve(node, model.aliases)
    root = chain_root(node)  # tldevice of tldevice.exp
    if target is None or root is None:
        return []
    rest = target[len(model.aliases.get(root.id, "")):]
    return [target, *(other + rest for other in model.alias_alternatives.get(root.id, []))]


def _triton_op(node: ast.AST, model: ModuleModel, values: Values, seen: frozenset[str] = frozenset()) -> bool:
    """``node`` is a ``triton.language`` operation whichever way the file binds it: every import its root may come
    from is in ``triton.language``, and a module-level name bound only by plain assignments is one each value of
    which is (``if FAST: exp = tldevice.fast_expf`` / ``else: exp = tl.exp``: the compiler reads the global at
    compile time and finds a Triton operation either way)."""
    if isinstance(node, ast.IfExp):  # exp = tl.exp if FAST else tl.exp2
        return _triton_op(node.body, model, values, seen) and _triton_op(node.orelse, model, values, seen)
    if isinstance(node, ast.Name) and node.id not in seen:
        assigned = values.get(node.id, [])
        if assigned and all(v is not None for v in assigned) and model.binding_counts.get(node.id) == len(assigned):
            return all(_triton_op(v, model, values, seen | {node.id}) for v in assigned if v is not None)
    paths = _import_paths(node, model)
    return bool(paths) and all(p.startswith(_TRITON_OPS) for p in paths)


class _Judge:
    """What one kernel's names are (:func:`check_kernel_body`), and whether a node of its body compiles."""

    def __init__(self, kernel: ast.FunctionDef | ast.AsyncFunctionDef, model: ModuleModel, jit_names: set[str],
                 module_values: Values, jit_defs: dict[str, ast.FunctionDef | ast.AsyncFunctionDef],
                 launched: bool = False, shaped_functions: set[str] | None = None,
                 shape_params: dict[str, set[str]] | None = None) -> None:
        self.model, self.jit_names, self.module_values, self.jit_defs = model, jit_names, module_values, jit_defs
        self.shaped_functions = shaped_functions if shaped_functions is not None else set()
        self.shape_params = shape_params if shape_params is not None else {}  # jit function -> _shape_params
        self.kernel = kernel
        self.own_shape_params = self.shape_params.get(kernel.name) or _shape_params(kernel, model)
        args = [*kernel.args.posonlyargs, *kernel.args.args, *kernel.args.kwonlyargs]
        self.constexpr_params = {a.arg for a in args if a.annotation is not None
                                 and resolve(a.annotation, model.aliases) == _CONSTEXPR}
        self.local = bound_names(kernel)  # parameters and every binding form of the kernel's own scope
        self.sites = scope_bindings(kernel)
        values: Values = {}
        for name, site in self.sites:  # a plain ``name = value``, or None: a loop, capture, import...
            values.setdefault(name, []).append(_assigned(site, model))
        self.constant: set[str] = set()
        self.host_constant: set[str] = set()
        if launched:  # only a launch hands its constexpr parameters values, each checked there (a number, a string...)
            self.host_constant = {p for p in self.constexpr_params if len(values.get(p, [])) == 1}
        # names a run-time branch may choose (a binding under an if, loop, match or short-circuit, or a conditional
        # expression in a value): one bit of a block's value per name, `if q & 1: b = 1.0 else: b = 0.0`, or a
        # shape or dtype picked by the data; never a value Python's own callables may take
        self._unrolled: set[str] | None = None  # see unrolled()
        self._data_shaped: set[str] | None = None  # see data_shaped()
        self._ready = False  # unrolled() and data_shaped() are asked only once the sets below are complete
        self.chosen = {name for name, site in self.sites if _under_control(site, kernel, model)} | {
            name for name, found in values.items() if any(
                v is not None and any(self._run_time_choice(n) for n in ast.walk(v)) for v in found)}
        changed = True
        while changed:  # locals every assignment of which is known without reading a constexpr parameter
            changed = False
            for name, found in values.items():
                if name not in self.host_constant | self.constexpr_params | self.chosen and all(
                        v is not None and self.compile_time(v, host=True) for v in found):
                    self.host_constant.add(name)
                    changed = True
        self.constant = {p for p in self.constexpr_params if len(values.get(p, [])) == 1}  # the parameter alone
        # a name the data may steer to one of its values: bound more than once, once under a branch or loop the data
        # steers (`if q & 1: nK: tl.constexpr = 2 else: ... = 1`; a branch on compile-time values, `if BLOCK > 64:`,
        # steers nothing), or a loop's target over run-time bounds. One binding inside a run-time loop (fla's
        # `n_dims: tl.constexpr = log2(b.shape[0])`) is the same value on every pass.
        counts: dict[str, int] = {}
        for name, _site in self.sites:
            counts[name] = counts.get(name, 0) + 1
        steered = {name for name, site in self.sites if self._run_time_control(site) and (
            counts[name] > 1 or isinstance(self.model.parents.get(id(site)), ast.For | ast.AsyncFor))}
        changed = True
        while changed:  # locals every assignment of which is compile-time
            changed = False
            for name, found in values.items():
                if name not in self.constant and name not in self.constexpr_params and name not in steered and all(
                        v is not None and self.compile_time(v) for v in found):
                    self.constant.add(name)
                    changed = True
        self.blocks: set[str] = set()  # filled below; block() reads it while the set is found
        self.blocks = self._block_names(args)
        self._ready = True

    def _run_time_control(self, site: ast.AST) -> bool:
        """A binding at ``site`` happens or not (or how often) by a test or a loop the data may steer: an ``if``,
        ``while`` or conditional expression whose test is not compile-time, a loop whose bounds are not, a
        ``match``, ``with`` or short-circuit. A loop's own target counts as steered unless the loop is a
        ``tl.static_range`` over compile-time bounds."""
        child, up = site, self.model.parents.get(id(site))
        while up is not None and up is not self.kernel:
            if isinstance(up, ast.If | ast.While | ast.IfExp) and child is not up.test:
                if not self.compile_time(up.test):
                    return True
            elif isinstance(up, ast.For | ast.AsyncFor):
                kind = self._range_kind(up.iter)
                bounded = kind is not None and isinstance(up.iter, ast.Call) and all(
                    self.compile_time(a) for a in [*up.iter.args, *(k.value for k in up.iter.keywords)])
                if not bounded or (child is up.target and kind != _STATIC_RANGE):
                    return True
            elif isinstance(up, _CONTROL):
                return True
            child, up = up, self.model.parents.get(id(up))
        return False

    def _constexpr_shape(self, node: ast.List) -> bool:
        """``SHAPE: tl.constexpr = [M, 2]``: a list of compile-time values bound as a constexpr (fla's bitonic sort)."""
        up = self.model.parents.get(id(node))
        return isinstance(up, ast.AnnAssign) and up.value is node and \
            resolve(up.annotation, self.model.aliases) == _CONSTEXPR and self.compile_time(node)

    def _run_time_choice(self, node: ast.AST) -> bool:
        """A conditional expression or short-circuit whose test is not a host value (the data may choose)."""
        if isinstance(node, ast.IfExp):
            return not self.compile_time(node.test, host=True)
        if isinstance(node, ast.BoolOp):
            return not all(self.compile_time(v, host=True) for v in node.values)
        return False

    def unrolled(self) -> set[str]:
        """Loop variables of ``for i in tl.static_range(...)`` over host-known bounds (every binding of the name is
        one): constexprs to Triton, and, besides host values, the only names a host-side index (a tuple of the
        file's, indexed per unrolled step) may be."""
        if self._unrolled is None:
            self._unrolled = set()  # while it is found, no name is (a bound naming its own loop variable)
            self._unrolled = {name for name, site in self.sites if self._unrolled_site(site)} - {
                name for name, site in self.sites if not self._unrolled_site(site)}
        return self._unrolled

    def _unrolled_site(self, site: ast.AST) -> bool:
        up = self.model.parents.get(id(site))
        return isinstance(up, ast.For) and up.target is site and self._range_kind(up.iter) == _STATIC_RANGE and \
            isinstance(up.iter, ast.Call) and not up.iter.keywords and \
            all(self.compile_time(a, host=True) for a in up.iter.args)

    def _block_names(self, args: list[ast.arg]) -> set[str]:
        """The kernel's names that hold values of its program wherever they are bound (the largest such set, so
        that ``acc = acc + x`` keeps ``acc`` a block): a parameter that is not a constexpr, a plain assignment, an
        unpacking or a walrus of a block, a loop over ``range``/``tl.range``/``tl.static_range``. A name bound
        otherwise (``ops = OPS`` of a constexpr, a ``global``, an import, a handler) is no block: its methods are
        Python the interpreter would run."""
        params = {a.arg for a in args}
        blocks = {name for name, _ in self.sites}
        changed = True
        while changed:
            changed = False
            self.blocks = blocks
            for name, site in self.sites:
                if name in blocks and not self._binds_block(name, site, params):
                    blocks.discard(name)
                    changed = True
        return blocks

    def _binds_block(self, name: str, site: ast.AST, params: set[str]) -> bool:
        if isinstance(site, ast.arg):
            return name in params and name not in self.constexpr_params
        if not isinstance(site, ast.Name):
            return False
        up, target = self.model.parents.get(id(site)), cast(ast.expr, site)
        while isinstance(up, ast.Tuple | ast.List | ast.Starred):  # a, b = tl.split(x): unpacking a block
            target, up = up, self.model.parents.get(id(up))
        if isinstance(up, ast.AugAssign):
            return True  # acc += x: the name's other bindings decide
        if isinstance(up, ast.Assign | ast.AnnAssign | ast.NamedExpr) and up.value is not None:
            value = up.value
            if isinstance(value, ast.Tuple) and isinstance(target, ast.Tuple) and target is not site and \
                    len(value.elts) == len(target.elts) and not any(isinstance(e, ast.Starred) for e in target.elts):
                index = next(i for i, e in enumerate(target.elts) if site is e or site in ast.walk(e))
                return self._holds_block(value.elts[index])
            return self.block(value) or target is site and self._holds_block(value)
        if isinstance(up, ast.For):
            return self._range_kind(up.iter) is not None
        return False

    def _range_kind(self, node: ast.AST) -> str | None:
        """``"range"`` (the builtin), ``triton.language.range`` or ``triton.language.static_range`` for a call of
        one (None: ``node`` is none)."""
        if not isinstance(node, ast.Call):
            return None
        if isinstance(node.func, ast.Name) and node.func.id == "range" and "range" not in self.model.binding_counts:
            return "range"
        target = resolve(node.func, self.model.aliases)
        return target if target in _RANGES else None

    def _holds_block(self, value: ast.expr) -> bool:
        """A value a name may hold and still count as the program's: a block, or a number made at compile time
        (``acc = 0.0`` before ``acc += tl.sum(x)``), never a constexpr handed on as it is (``ops = OPS``)."""
        return self.block(value) or self.compile_time(value) and not _bare_host(value)

    def triton_op(self, func: ast.expr) -> bool:
        """``func`` is a Triton operation (:func:`_triton_op`), not a local of the kernel that shadows one."""
        return not (isinstance(func, ast.Name) and func.id in self.local) and _triton_op(func, self.model,
                                                                                          self.module_values)

    # -- names ------------------------------------------------------------------------------------------------
    def name_allowed(self, node: ast.Name) -> bool:
        """A name a kernel may read: its own, a jit function, an import (``tl``, ``math``), a compiled builtin, or a
        module-level name whose value is immutable (no list, instance, class or plain function of the file)."""
        name = node.id
        if name in self.local or name in self.jit_names or resolve(node, self.model.aliases) is not None:
            return True
        if name in _ALLOWED_BUILTINS and name not in self.model.binding_counts:
            return True
        return _immutable_global(name, self.model, self.module_values)

    def compile_time(self, node: ast.AST, host: bool = False) -> bool:
        """``node`` is known when the kernel compiles. ``host``: known without reading a constexpr parameter, the
        only values Python's own callables (``float``, ``int``, ``bool``, ``math.*``) may be handed: under the
        interpreter a jit function calls another as plain Python, so a constexpr parameter may hold a block (as
        Triton's attention tutorial hands one ``offs_m``), which ``float`` would read through the interpreter's
        ``__index__``; the callers that could hand one are not always found by name."""
        constant = self.host_constant if host else self.constant
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.Name):
            if node.id in self.local:
                return node.id in constant or self._ready and node.id in self.unrolled()
            return node.id not in self.jit_names and (resolve(node, self.model.aliases) is not None
                                                     or _immutable_global(node.id, self.model, self.module_values))
        if isinstance(node, ast.Attribute):
            if resolve(node, self.model.aliases) is not None:
                return True  # tl.float32, math.pi
            if node.attr == "value":  # a constexpr's payload: compile-time only where the constexpr is
                return isinstance(node.value, ast.Name) and node.value.id in constant
            # a local's own metadata, read through attributes and compile-time subscripts only: a call in the
            # chain (`z.broadcast_to([n]).shape`) makes a new value whose shape or dtype its arguments may pick
            root = _plain_root(node.value, lambda i: self.compile_time(i, host))
            return node.attr in _COMPILE_TIME_ATTRS and root is not None and root.id in self.local and \
                not (host and root.id in self.chosen) and not (self._ready and root.id in self.data_shaped())
        if isinstance(node, ast.Subscript):
            return self.compile_time(node.value, host) and self.compile_time(node.slice, host)
        if isinstance(node, ast.Tuple | ast.List):
            return all(self.compile_time(e, host) for e in node.elts)
        if isinstance(node, ast.BinOp):
            return self.compile_time(node.left, host) and self.compile_time(node.right, host)
        if isinstance(node, ast.UnaryOp):
            return self.compile_time(node.operand, host)
        if isinstance(node, ast.BoolOp):
            return all(self.compile_time(v, host) for v in node.values)
        if isinstance(node, ast.Compare):
            return self.compile_time(node.left, host) and all(self.compile_time(c, host) for c in node.comparators)
        if isinstance(node, ast.IfExp):
            return all(self.compile_time(n, host) for n in (node.test, node.body, node.orelse))
        if isinstance(node, ast.Call):
            target = resolve(node.func, self.model.aliases) or ""
            arguments = [*node.args, *(k.value for k in node.keywords)]
            if isinstance(node.func, ast.Name) and node.func.id == "len" and "len" not in self.model.binding_counts:
                return len(node.args) == 1 and not node.keywords and self.compile_time(node.args[0], host)
            if not host and (self.triton_op(node.func) and target not in _RUN_TIME_OPS or isinstance(
                    node.func, ast.Name) and node.func.id in self.jit_names and node.func.id not in self.local):
                # tl.core.get_int_dtype(bitwidth=...), a jit helper's log2(BLOCK): nothing of the data reaches them
                return all(self.compile_time(a) for a in arguments)
            python = target.startswith(_PYTHON_MODULES) or (
                isinstance(node.func, ast.Name) and node.func.id in _COMPILE_TIME_BUILTINS
                and node.func.id not in self.model.binding_counts)
            return (target == _CONSTEXPR or python or target.startswith(_HOST_MODULES)) and not node.keywords and all(
                self.compile_time(a, host or python) for a in node.args)
        return False

    def block(self, node: ast.AST) -> bool:
        """``node`` is a value of the kernel's program (a block, or its dtype): a parameter or local that is not a
        constexpr, a Triton operation's or jit function's result, or built from those."""
        if isinstance(node, ast.Name):
            return node.id in self.blocks
        if isinstance(node, ast.Call):
            if resolve(node.func, self.model.aliases) == _CONSTEXPR:
                return False  # tl.constexpr(v) holds any Python value
            if self.triton_op(node.func) or isinstance(node.func, ast.Name) and node.func.id in self.jit_names \
                    and node.func.id not in self.local:
                return True
            if isinstance(node.func, ast.Name) and node.func.id in ("min", "max") and \
                    node.func.id not in self.model.binding_counts and any(self.block(a) for a in node.args):
                return True  # min(x, 1.0) compiles to tl.minimum
            return isinstance(node.func, ast.Attribute) and node.func.attr in _block_methods() and \
                self.block(node.func.value)
        if isinstance(node, ast.Attribute):
            if (resolve(node, self.model.aliases) or "").startswith(_TRITON_OPS):
                return True  # tl.float32: a Triton dtype
            return node.attr != "value" and (node.attr in _block_methods() or node.attr in _COMPILE_TIME_ATTRS) \
                and self.block(node.value)  # .value of a constexpr is any Python value
        if isinstance(node, ast.Subscript):
            return self.block(node.value)
        if isinstance(node, ast.BinOp):
            return self.block(node.left) or self.block(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.block(node.operand)
        if isinstance(node, ast.Compare):  # (n > 0).to(tl.int32), (a == b).to(tl.float32)
            return self.block(node.left) or any(self.block(c) for c in node.comparators)
        if isinstance(node, ast.IfExp):  # (a if FLAG else 0.0).to(...): each branch holds a block, one is one
            branches = (node.body, node.orelse)
            return all(self._holds_block(b) for b in branches) and any(self.block(b) for b in branches)
        return False

    def function_slot(self, node: ast.Call, target: str, method: bool) -> str | None:
        """Why the function a Triton operation calls back (``tl.reduce``'s ``combine_fn``, ``tl.map_elementwise``'s
        ``scalar_fn``) is not one Triton compiles (None: it is a jit function of the file or a Triton operation).
        The interpreter calls it in Python on every element, so a host object there would run over the values."""
        slot = _FUNCTION_SLOTS.get(target)
        if slot is None:
            return None
        position, keyword = slot
        position -= int(method)  # x.reduce(axis, fn): the block is the receiver
        given = [k.value for k in node.keywords if k.arg == keyword] or node.args[position:position + 1]
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return f"calls `{ast.unparse(node.func)}` with unpacked arguments (name its {keyword} plainly)"
        for fn in given:
            if isinstance(fn, ast.Name) and fn.id in self.jit_names and fn.id not in self.local:
                continue
            if isinstance(fn, ast.Attribute | ast.Name) and self.triton_op(fn):
                continue
            return (f"hands `{ast.unparse(fn)}` to `{ast.unparse(node.func)}` as its {keyword}, which is neither a "
                    "@triton.jit function of the file nor a Triton operation")
        return None

    def _constexpr_slots(self, node: ast.Call, callee: ast.FunctionDef | ast.AsyncFunctionDef
                         ) -> list[tuple[str, ast.expr]]:
        """(parameter, argument) for each ``tl.constexpr`` parameter of ``callee`` that ``node`` hands a value."""
        params = [*callee.args.posonlyargs, *callee.args.args]
        given = [(params[i] if i < len(params) else None, a) for i, a in enumerate(node.args)]
        by_name = {p.arg: p for p in [*params, *callee.args.kwonlyargs]}
        given += [(by_name.get(k.arg or ""), k.value) for k in node.keywords]
        return [(p.arg, v) for p, v in given if p is not None and p.annotation is not None
                and resolve(p.annotation, self.model.aliases) == _CONSTEXPR]

    def _known_at_compile_time(self, value: ast.expr) -> bool:
        jit_function = isinstance(value, ast.Name) and value.id in self.jit_names and value.id not in self.local
        return jit_function or self.compile_time(value)

    def constexpr_arguments(self, node: ast.Call, name: str) -> str | None:
        """Why a call of the jit function ``name`` hands one of its ``tl.constexpr`` parameters something that is
        neither a compile-time value here nor a value of the program (None: it does not). Under the interpreter a
        jit function calls another as plain Python, no launch in between: a constexpr parameter there takes
        whatever it is handed (a block, which the callee then treats as one, or text or an object laundered
        through ``tl.constexpr(...).value``, which it must not get)."""
        callee = self.jit_defs.get(name)
        if callee is None:
            return None
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return f"calls its jit function `{name}` with unpacked arguments (hand each argument by name or position)"
        for param, value in self._constexpr_slots(node, callee):
            if not (self._known_at_compile_time(value) or self.block(value)):
                return (f"hands `{ast.unparse(value)}` to the tl.constexpr parameter `{param}` of `{name}`, which is "
                        "neither a value known when the kernel compiles nor a value of the program")
        shaped = self.shape_params.get(name, set())
        for param, value in _slots(node, callee):
            if param in shaped and not self.compile_time(value) and not _names_only(value, self.own_shape_params):
                return (f"hands `{ast.unparse(value)}` to `{param}` of `{name}`, which gives a shape there and must be "
                        "known when the kernel compiles (a tl.constexpr, a literal, a block's shape)")
        return None

    # -- nodes ------------------------------------------------------------------------------------------------
    def node(self, node: ast.AST) -> str | None:
        """Why ``node`` does not compile (None: it does)."""
        model = self.model
        if isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp | ast.Lambda | ast.Dict
                      | ast.Set):
            return f"builds Python containers ({type(node).__name__}), which Triton does not compile"
        if isinstance(node, ast.List) and not isinstance(model.parents.get(id(node)), ast.Call | ast.keyword) and \
                not self._constexpr_shape(node):
            return ("builds a Python list (a list stands only as a shape argument, tl.zeros([M, N], ...), or as a "
                    "shape known when the kernel compiles, SHAPE: tl.constexpr = [M, N])")
        if isinstance(node, ast.JoinedStr) and not _in_message(node, model):
            return "formats a string outside a message (f-strings belong in tl.static_assert or tl.device_print)"
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and _is_text(node.left) and \
                not _in_message(node, model):
            return "formats a string with % outside a message"
        if isinstance(node, ast.Break | ast.Continue):
            return (f"holds `{type(node).__name__.lower()}` (Triton compiles no break or continue; under the "
                    "interpreter a loop left at a point the data picks hands its variable out as a Python int)")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and not (
                self.compile_time(node.left) and self.compile_time(node.right)):
            return (f"raises to a power with `**` on a value known only when the kernel runs (`{ast.unparse(node)}`: "
                    "Triton blocks have no `**`, so the interpreter computes it in Python): use tl.exp2/tl.exp or "
                    "libdevice pow")
        if isinstance(node, _EXCEPTION_HANDLING):
            return f"holds `{type(node).__name__.lower()}` (Triton compiles no exception handling)"
        if isinstance(node, ast.Global | ast.Nonlocal):
            return (f"declares `{', '.join(node.names)}` {type(node).__name__.lower()} (Triton compiles no such "
                    "declaration; a kernel reads module-level constants by name)")
        if isinstance(node, ast.Attribute | ast.Subscript) and not isinstance(node.ctx, ast.Load):
            return f"stores into `{ast.unparse(node)}` (a kernel writes memory with tl.store, not Python objects)"
        if isinstance(node, ast.Subscript) and not self.block(node.value) and not self._host_index(node.slice):
            return (f"indexes `{ast.unparse(node.value)}` with `{ast.unparse(node.slice)}`, which is not known when "
                    "the kernel compiles (the interpreter reads a block's value into a Python index): index a "
                    "tuple with literals, immutable constants or a tl.static_range variable, or load from memory")
        if isinstance(node, ast.BinOp) and (_is_text(node.left) or _is_text(node.right)) and \
                not _in_message(node, model):
            return "computes with text outside a message (repeating or joining strings is Python the host runs)"
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and not self.name_allowed(node):
            return (f"reads `{node.id}`, which is neither its own nor a jit function, an import or an immutable "
                    "module-level constant (a list, object or plain function there would be Python the host runs)")
        if isinstance(node, ast.Call):
            return self.call(node)
        return None

    def _host_index(self, index: ast.AST) -> bool:
        """An index Python may compute from: known without reading a block (slices of such values too)."""
        if isinstance(index, ast.Slice):
            return all(self._host_index(part) for part in (index.lower, index.upper, index.step) if part is not None)
        if isinstance(index, ast.Tuple):
            return all(self._host_index(e) for e in index.elts)
        if isinstance(index, ast.Name) and index.id in self.unrolled():
            return True
        return self.compile_time(index, host=True)

    def _range_use(self, node: ast.Call, target: str) -> str | None:
        """Why a ``range``/``tl.range``/``tl.static_range`` call is used other than as a ``for`` loop's iterable,
        or a ``tl.static_range`` has bounds not known when the kernel compiles (None: neither)."""
        up = self.model.parents.get(id(node))
        if not (isinstance(up, ast.For) and up.iter is node):
            return (f"uses `{ast.unparse(node)}` other than as a for loop's iterable (the interpreter makes a Python "
                    "range of a block's value: its length, bounds or items would be Python over the data)")
        if target == _STATIC_RANGE and not all(self.compile_time(a) for a in [*node.args,
                                                                               *(k.value for k in node.keywords)]):
            return f"unrolls `{ast.unparse(node)}` over a bound not known when the kernel compiles"
        return None

    def data_shaped(self) -> set[str]:
        """Locals a value whose shape the data may have picked flows into: a reduction or scan handed an axis that
        is not known when the kernel compiles, or another such local (their metadata is no compile-time value)."""
        if self._data_shaped is None:
            self._data_shaped = set()
            values = [(name, _assigned(site, self.model) or self.model.parents.get(id(site)))
                      for name, site in self.sites]
            changed = True
            while changed:
                changed = False
                for name, value in values:
                    if name not in self._data_shaped and value is not None and any(
                            isinstance(n, ast.Name) and n.id in self._data_shaped or isinstance(n, ast.Call)
                            and self._axis_from_data(n) for n in ast.walk(value)):  # fmt: skip
                        self._data_shaped.add(name)
                        changed = True
        return self._data_shaped

    def forget_shapes(self) -> None:
        self._data_shaped = self._unrolled = None

    def returns_data_shaped(self) -> bool:
        """A ``return`` of this function hands back a value whose shape the data may have picked."""
        return any(isinstance(n, ast.Return) and n.value is not None and any(
            isinstance(m, ast.Name) and m.id in self.data_shaped() or isinstance(m, ast.Call)
            and self._axis_from_data(m) for m in ast.walk(n.value)) for n in ast.walk(self.kernel))  # fmt: skip

    def _axis_from_data(self, node: ast.Call) -> bool:
        if isinstance(node.func, ast.Name) and node.func.id in self.shaped_functions and node.func.id not in self.local:
            return True  # a jit helper that returns such a value
        target = resolve(node.func, self.model.aliases) or ""
        method = isinstance(node.func, ast.Attribute) and not target and self.block(node.func.value)
        name = (node.func.attr if method and isinstance(node.func, ast.Attribute) else target.rsplit(".", 1)[-1])
        if not (method or self.triton_op(node.func)) or name not in _AXIS_OPS:
            return False
        return any(param in _AXIS_PARAMS and not self.compile_time(value)
                   and not _names_only(value, self.own_shape_params)  # every call hands these a compile-time value
                   for param, value in _arguments(node, name, method))

    def _shape_arguments(self, node: ast.Call, target: str, method: bool) -> str | None:
        """Why a Triton operation is handed a shape, axis, dtype or option it needs at compile time that is not
        known then (None: every such argument is): the interpreter reads a block there as a Python int, so the
        result's shape (``.shape``, ``.numel``) would carry the data to the host."""
        name = target.rsplit(".", 1)[-1]
        compile_time = _COMPILE_TIME_PARAMS.get(name)
        if compile_time is None:
            return None
        for param, value in _arguments(node, name, method):
            if param in compile_time and not self.compile_time(value) and not _names_only(value, self.own_shape_params):
                role = param.strip("*") or "shape"
                return (f"hands `{ast.unparse(value)}` to `{ast.unparse(node.func)}` as its {role}, which must be "
                        "known when the kernel compiles (a tl.constexpr, a literal, a block's shape)")
        return None

    def call(self, node: ast.Call) -> str | None:
        func, model = node.func, self.model
        target = resolve(func, model.aliases)
        arguments = [*node.args, *(k.value for k in node.keywords)]
        kind = self._range_kind(node)
        if kind is not None:
            why = self._range_use(node, kind)
            if why:
                return why
        if isinstance(func, ast.Name) and func.id == "len" and "len" not in model.binding_counts and not all(
                isinstance(a, ast.Name) or self.compile_time(a) for a in node.args):
            shown = ast.unparse(node.args[0]) if node.args else ""
            return f"takes `len` of `{shown}` (only of a name or a value known when the kernel compiles)"
        if self.triton_op(func):  # by import or a module-level alias of one (exp = tl.exp)
            return self.function_slot(node, target or "", method=False) or self._shape_arguments(
                node, target or "", method=False)
        if isinstance(func, ast.Name) and func.id in self.jit_names and func.id not in self.local:
            return self.constexpr_arguments(node, func.id)
        if isinstance(func, ast.Name) and func.id in _ALLOWED_BUILTINS and func.id not in model.binding_counts:
            if func.id == "print":
                return "calls `print` with keywords (file=, sep=...): use tl.device_print" if node.keywords else None
            if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
                return f"calls `{func.id}` with keywords or unpacked arguments (key=, default=, *...)"
            if func.id in ("min", "max") and len(node.args) < 2:
                return f"calls `{func.id}` on one argument (it would iterate over it): use tl.min / tl.max"
            if func.id in _COMPILE_TIME_BUILTINS and not all(self.compile_time(a, host=True) for a in arguments):
                return (f"calls `{func.id}` on a value known only when the kernel runs (or on a constexpr parameter, "
                        "which another jit function may hand a block: compute with tl operations instead)")
            return None
        if isinstance(func, ast.Attribute) and target is None:
            if func.attr in _block_methods() and self.block(func.value):
                # a block's method: x.to(...), tl.program_id(0).to(...), (a + b).sum(...)
                return self.function_slot(node, f"triton.language.{func.attr}", method=True) or \
                    self._shape_arguments(node, f"triton.language.{func.attr}", method=True)
            return (f"calls `{ast.unparse(func)}`, which is no method of a block (Triton compiles the methods of its "
                    "own values only)")
        python = (target or "").startswith(_PYTHON_MODULES)  # math.*: Python floats, never blocks
        if all(self.compile_time(a, host=python) for a in arguments) and (target or "").startswith(_HOST_MODULES):
            return None  # math.log2(math.e), triton.cdiv(N, BLOCK): evaluated when the kernel compiles
        if (target or "").startswith(_HOST_MODULES):
            return (f"calls `{ast.unparse(func)}` on a value known only when the kernel runs or on a constexpr "
                    "parameter (another jit function may hand one a block): use tl operations (tl.exp, tl.cdiv...)")
        if isinstance(func, ast.Name) and func.id in self.constexpr_params:
            return (f"calls its constexpr parameter `{func.id}` (a launch may hand it any Python function; choose "
                    "by a constexpr string, `if ACT == \"gelu\": v = gelu(v)`, or call the jit function by name)")
        return (f"calls `{ast.unparse(func)}`, which Triton runs only at compile time on tl.constexpr values "
                "(math.*, triton.cdiv...)")


def launched_only(tree: ast.Module, kernel: ast.FunctionDef | ast.AsyncFunctionDef, model: ModuleModel) -> bool:
    """``kernel`` is a module-level def the file only ever launches (``kernel[grid](...)``), the one def of its name:
    never called by another jit function (which, under the interpreter, could hand its constexpr parameters blocks),
    never handed on, aliased, rebound (but by ``kernel = triton.jit(kernel)`` or Triton's wrappers at module level)
    or shadowed. Its constexpr parameters then hold only what a launch hands over, which the interpreter's launch
    check limits to numbers, strings, dtypes and jit functions."""
    name = kernel.name
    if kernel not in tree.body:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == name \
                and node is not kernel:
            return False
        if isinstance(node, ast.Global | ast.Nonlocal) and name in node.names or \
                isinstance(node, ast.arg) and node.arg == name or \
                isinstance(node, ast.alias) and (node.asname or node.name).split(".")[0] == name:
            return False
        if isinstance(node, ast.Name) and node.id == name and not _launch_or_rebind(node, tree, model):
            return False
    return True


def _launch_or_rebind(node: ast.Name, tree: ast.Module, model: ModuleModel) -> bool:
    """``node`` (the kernel's name) stands in ``name[grid](...)``, or in a module-level ``name = triton.jit(name)`` /
    ``name = triton.heuristics(...)(name)`` (as the argument or the target)."""
    up = model.parents.get(id(node))
    if isinstance(node.ctx, ast.Load) and isinstance(up, ast.Subscript) and up.value is node:
        call = model.parents.get(id(up))
        return isinstance(call, ast.Call) and call.func is up
    statement = up if isinstance(node.ctx, ast.Store) else model.parents.get(id(up))
    return statement in tree.body and triton_rebind(statement, node.id, model.aliases,
                                                    TRITON_WRAPPERS | {"triton.jit"})


_EXCEPTION_HANDLING = (ast.Try, getattr(ast, "TryStar", ast.Try), ast.Raise)  # ast.TryStar: Python 3.11+
_CONTROL = (ast.If, ast.While, ast.For, ast.AsyncFor, ast.Match, ast.IfExp, ast.BoolOp, ast.With, ast.AsyncWith,
            *_EXCEPTION_HANDLING)


def _under_control(site: ast.AST, kernel: ast.AST, model: ModuleModel) -> bool:
    """A binding at ``site`` happens or not by a branch, loop, match or short-circuit within ``kernel``."""
    up = model.parents.get(id(site))
    while up is not None and up is not kernel:
        if isinstance(up, _CONTROL):
            return True
        up = model.parents.get(id(up))
    return False


def _bare_host(node: ast.AST) -> bool:
    """``node`` hands a value on unchanged (``OPS if C else OPS``, ``(OPS, 1)[0]``): no arithmetic made it."""
    if isinstance(node, ast.IfExp):
        return _bare_host(node.body) or _bare_host(node.orelse)
    if isinstance(node, ast.BoolOp):
        return any(_bare_host(v) for v in node.values)
    return isinstance(node, ast.Name | ast.Subscript | ast.Tuple | ast.Attribute)


# Triton operations that call a function back on every element (position counting the block, keyword)
_FUNCTION_SLOTS = {"triton.language.reduce": (2, "combine_fn"), "triton.language.associative_scan": (2, "combine_fn"),
                   "triton.language.map_elementwise": (0, "scalar_fn")}


def calls_back_per_element(source: str) -> int | None:
    """The line of the first Triton operation in ``source`` that calls a function back on every element
    (``tl.reduce(x, 0, combine)``, ``tl.associative_scan``, ``tl.map_elementwise``): the CPU's interpreter runs
    that function as Python once per element, so a correct kernel may need minutes there; None when there is none
    (or the source does not parse)."""
    try:
        tree = pyast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    model = build_model(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and resolve(node.func, model.aliases) in _FUNCTION_SLOTS:
            return node.lineno
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("reduce", "associative_scan") and len(node.args) >= 2:  # x.reduce(0, combine)
            return node.lineno
    return None


def _slots(node: ast.Call, callee: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[str, ast.expr]]:
    """(parameter, argument) for each argument ``node`` hands the jit function ``callee``."""
    params = [a.arg for a in [*callee.args.posonlyargs, *callee.args.args]]
    out = [(params[i], a) for i, a in enumerate(node.args) if i < len(params)]
    return out + [(k.arg, k.value) for k in node.keywords if k.arg]


def _names_only(value: ast.AST, names: set[str]) -> bool:
    """``value`` is one of ``names`` (a parameter that every call hands a compile-time value)."""
    return isinstance(value, ast.Name) and value.id in names


def _shape_params(callee: ast.FunctionDef | ast.AsyncFunctionDef, model: ModuleModel) -> set[str]:
    """The parameters of ``callee`` that stand alone in a shape position (or a reduction's axis) of a Triton operation
    in its body: every call must hand them a compile-time value."""
    # tl.constexpr parameters too: a call may hand one a block (Triton's attention tutorial does), which is no shape
    plain = {a.arg for a in [*callee.args.posonlyargs, *callee.args.args, *callee.args.kwonlyargs]}
    rebound = {name for name, site in scope_bindings(callee) if not isinstance(site, ast.arg)}
    found: set[str] = set()
    for node in ast.walk(callee):
        if not isinstance(node, ast.Call):
            continue
        target = resolve(node.func, model.aliases) or ""
        method = isinstance(node.func, ast.Attribute) and not target.startswith(_TRITON_OPS)
        name = node.func.attr if method and isinstance(node.func, ast.Attribute) else target.rsplit(".", 1)[-1]
        wanted = (_COMPILE_TIME_PARAMS.get(name) or (_AXIS_PARAMS if name in _AXIS_OPS else None)) if (
            method or target.startswith(_TRITON_OPS)) else None
        if wanted:
            found |= {v.id for p, v in _arguments(node, name, method) if p in wanted and isinstance(v, ast.Name)}
    return (found & plain) - rebound


def _plain_root(node: ast.AST, index_known: Callable[[ast.AST], bool]) -> ast.Name | None:
    """The name ``node`` reaches through attributes and subscripts whose indices ``index_known`` accepts (None: a
    call, another expression or an unaccepted index stands in the way)."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        if isinstance(node, ast.Subscript) and not index_known(node.slice):
            return None
        node = node.value
    return node if isinstance(node, ast.Name) else None


_STATIC_RANGE = "triton.language.static_range"
_RANGES = frozenset({"triton.language.range", _STATIC_RANGE})

# Parameters of Triton operations (as functions and as block methods) that make a new value's shape or type and that
# Triton needs at compile time. "*": the variadic shape or dims (``x.reshape(M, N)``, ``tl.permute(x, 1, 0)``).
_COMPILE_TIME_PARAMS: dict[str, frozenset[str]] = {
    "zeros": frozenset({"shape", "dtype"}), "full": frozenset({"shape", "dtype"}),
    "arange": frozenset({"start", "end"}), "broadcast_to": frozenset({"*", "shape"}),
    "reshape": frozenset({"*", "shape", "can_reorder"}), "view": frozenset({"*", "shape"}),
    "permute": frozenset({"*", "dims"}), "trans": frozenset({"*", "dims"}), "expand_dims": frozenset({"axis"}),
    "cast": frozenset({"dtype", "bitcast"}), "to": frozenset({"dtype", "bitcast"}),
    "make_block_ptr": frozenset({"block_shape", "order"}), "make_tensor_descriptor": frozenset({"block_shape"}),
}
# Reductions and scans whose axis picks the result's shape. Library code hands some a block there (Liger's
# `tl.max(m, blk_max)`, a path Triton would not compile), so they are not refused for it: the value they make has a
# shape the data may have picked, and a name bound to it has no compile-time metadata (_Judge.data_shaped).
_AXIS_PARAMS = frozenset({"axis", "keep_dims", "dim", "k", "num_bins", "return_indices"})
_AXIS_OPS = frozenset({"sum", "max", "min", "argmax", "argmin", "xor_sum", "reduce", "cumsum", "cumprod",
                       "associative_scan", "sort", "flip", "topk", "gather", "histogram"})
# Triton operations whose value is no compile-time value although their arguments are (the launch's grid, random bits).
_RUN_TIME_OPS = frozenset({"triton.language.program_id", "triton.language.num_programs", "triton.language.rand",
                           "triton.language.randn", "triton.language.randint", "triton.language.randint4x"})


def _arguments(node: ast.Call, name: str, method: bool) -> list[tuple[str, ast.expr]]:
    """(parameter, argument) for each argument of a call of the Triton operation ``name`` (``method``: called on a
    block, which is its first parameter), named by the installed Triton's signature; a list or tuple display
    stands for each of its elements (a shape's entries); variadic arguments are named ``*``."""
    positional = _signature(name, method)[1:] if method else _signature(name, method)
    out: list[tuple[str, ast.expr]] = []
    for i, arg in enumerate(node.args):
        param = positional[i] if i < len(positional) else "*"
        out.append((param, arg))
    out += [(k.arg or "*", k.value) for k in node.keywords]
    return [(param, e) for param, arg in out
            for e in (arg.elts if isinstance(arg, ast.List | ast.Tuple) else [arg])]


@functools.lru_cache(maxsize=128)
def _signature(name: str, method: bool) -> tuple[str, ...]:
    """The positional parameter names of ``triton.language.<name>`` (``method``: of the block method, its receiver
    first), up to a variadic one, named ``*``; a jit-compiled operation's own function's."""
    import inspect

    try:
        import triton.language as tl

        fn = getattr(tl.tensor if method else tl, name)
        params = inspect.signature(getattr(fn, "fn", fn)).parameters.values()
    except (ImportError, AttributeError, TypeError, ValueError):
        return ()
    out: list[str] = []
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            out.append("*")
            break
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and not p.name.startswith("_"):
            out.append(p.name)
    return tuple(out)


# Builtins Triton's compiler knows: range/len/isinstance/getattr/print, min/max (tl.minimum/maximum on blocks);
# float/int/bool convert compile-time values only.
_COMPILE_TIME_BUILTINS = frozenset({"float", "int", "bool"})
_ALLOWED_BUILTINS = frozenset({"range", "len", "min", "max", "print", "isinstance", "getattr"}) | _COMPILE_TIME_BUILTINS
_HOST_MODULES = ("math.", "triton.cdiv", "triton.next_power_of_2")
_PYTHON_MODULES = ("math.",)  # what converts its arguments to Python numbers (triton.cdiv of a block stays a block)
