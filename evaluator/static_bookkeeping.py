"""Bookkeeping on the forward path: the few torch reductions and comparisons the static checker leaves to run time.

Honest launchers count and check before and after their kernels: Liger's cross entropy does
``target_mask = target != ignore_index; n = target_mask.sum().item()``, ``assert (target * mask).max() < V``, and
returns ``torch.sum(loss_1d)`` of the per-row losses its kernel wrote. The run time allows torch ops on tensors at
most 1/64 of the inputs' size (reported) and refuses larger ones, so statically a call is bookkeeping, and left to
the run time, when all of these hold:

* it is a full reduction to one value (``sum``, ``mean``, ``max``, ``min``, ``amax``, ``amin``, ``any``, ``all``,
  ``count_nonzero`` with no dimension and no argument but ``dtype``) or an element-wise comparison (``eq``, ``ne``,
  ``lt``, ``le``, ``gt``, ``ge`` with one operand), as a tensor method or ``torch.<op>(tensor, ...)``, without
  ``out=`` and not in place;
* its tensor is a **mask** (a comparison written in place, ``(target != ignore).sum()``, or a local name only ever
  bound to one, ``mask = target != ignore``), a **kernel-written buffer** (a local name only ever bound to a torch
  allocation -- ``torch.zeros``/``empty``/``full``/``ones``/``*_like``/``new_*``, or one of those or None -- and
  passed to one of the candidate's own kernel launches in the same function) or a **result of the candidate's own
  code** (a local name only ever bound to what one of the file's module functions or ``autograd.Function.apply``
  returns, or an item of it, unpacked or subscripted, or a scalar computed from such names by full reductions and
  arithmetic: flash-attention's ``loss, z = f(...); loss = loss.sum() / (target != ignore).sum()`` over the per-row
  losses its launcher returns), never a parameter or any other value directly; and the call **runs a bounded
  number of times per forward call** (at most :data:`MAX_RUNS`, call sites in a row adding up): not inside a loop or
  comprehension, in a module-level function, an
  ``autograd.Function.forward``, the entry's ``forward`` or the forward of a module class of the file held once as
  ``self.attr = Cls(...)``, that is not recursive and whose every call site runs once too (so the input cannot be
  reduced chunk by chunk in pieces under the run time's size limit); and the file holds at most :data:`MAX_SITES`
  such calls;
* or the call stands in an ``assert`` (test or message) and its value only reaches the assertion through
  comparisons, boolean operators, arithmetic, f-strings and ``.item()``: it decides pass or fail, nothing else.

A softmax, an exponential, a matmul, a reduction over a dimension or any op on the inputs themselves stays
``torch-compute``; a full reduction of a kernel-produced copy of the whole input passes here and is refused at
run time (it is not small).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping

from evaluator.static_model import binding_key, type_of_self
from evaluator.static_uses import Use, use_of

MAX_SITES = 8  # mask/buffer bookkeeping calls per file (Liger's cross entropy has four)
_VIEWS = frozenset({"view", "reshape", "flatten", "squeeze", "unsqueeze", "contiguous", "float", "double", "to"})
MAX_RUNS = 2  # times a function with bookkeeping may run per forward call (call sites in a row add up)
REDUCTIONS = frozenset({"sum", "mean", "max", "min", "amax", "amin", "any", "all", "count_nonzero"})
COMPARISONS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})
_ALLOCATIONS = frozenset({"torch.empty", "torch.zeros", "torch.ones", "torch.full", "torch.empty_like",
                          "torch.zeros_like", "torch.ones_like", "torch.full_like", "torch.empty_strided"})  # fmt: skip
_NEW_METHODS = frozenset({"new_empty", "new_zeros", "new_ones", "new_full"})
_COMPARE_OPS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
# Nodes through which a value in an assert only decides whether it passes.
_ASSERT_PATH = (ast.Compare, ast.BoolOp, ast.UnaryOp, ast.BinOp, ast.JoinedStr, ast.FormattedValue)

Resolve = Callable[[ast.AST], "str | None"]
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


def _bindings(fn: FunctionNode) -> dict[str, list[ast.expr | None]]:
    """Local name -> the values assigned to it in ``fn`` (None for a binding that is not a plain assignment)."""
    values: dict[str, list[ast.expr | None]] = {}
    plain: set[int] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values.setdefault(node.targets[0].id, []).append(node.value)
            plain.add(id(node.targets[0]))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Tuple | ast.List):  # fmt: skip
            names = [e for e in node.targets[0].elts if isinstance(e, ast.Name)]
            if len(names) != len(node.targets[0].elts):
                continue
            for i, element in enumerate(names):  # loss, z_loss = f(...): an item of its value each
                values.setdefault(element.id, []).append(ast.Subscript(node.value, ast.Constant(i), ast.Load()))
                plain.add(id(element))
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in plain:
            values.setdefault(node.id, []).append(None)
        elif isinstance(node, ast.arg):
            values.setdefault(node.arg, []).append(None)
    return values


_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)


def _in_loop(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """``node`` stands inside a loop or comprehension of its own function."""
    parent = parents.get(id(node))
    while parent is not None and not isinstance(parent, _SCOPES):
        if isinstance(parent, _LOOPS):
            return True
        parent = parents.get(id(parent))
    return False


def _enclosing_key(node: ast.AST, parents: dict[int, ast.AST], keys: dict[int, str]) -> str | None:
    """The function key whose own body holds ``node``; ``""`` at module level; None inside a nested def/lambda."""
    parent = parents.get(id(node))
    while parent is not None:
        if isinstance(parent, ast.Module):
            return ""
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return keys.get(id(parent))
        parent = parents.get(id(parent))
    return None


def run_once_functions(tree: ast.Module, functions: Mapping[str, ast.AST], autograd: set[str], entry: str,
                       parents: dict[int, ast.AST], reaches: Callable[[str], set[str]],
                       modules: Mapping[str, str] | None = None,
                       entry_forward: str | None = None) -> set[str]:  # fmt: skip
    """Keys of the functions that run at most once per forward call: the entry's forward (``entry_forward``, its own
    or the one it inherits; default ``{entry}.forward``), module-level functions
    and autograd forwards called only directly (``f(...)``, ``Cls.apply(...)``), and the forward of a module class
    of the file whose instances are only made as ``self.attr = Cls(...)`` (``modules``: ``"self.attr"`` -> ``Cls``,
    each bound once) and called as ``self.attr(...)``: outside loops, from functions that run once themselves (or at
    import), and not recursive (``reaches(key)``: what ``key`` can call)."""
    modules = modules or {}
    keys = {id(fn): key for key, fn in functions.items()}
    candidates = {k for k in functions if "." not in k and k != entry}
    candidates |= {f"{cls}.forward" for cls in autograd if f"{cls}.forward" in functions}
    layers = {cls for cls in modules.values() if f"{cls}.forward" in functions and cls not in autograd}
    candidates |= {f"{cls}.forward" for cls in layers}
    sites: dict[str, list[str | None]] = {k: [] for k in candidates}
    for n in ast.walk(tree):
        up = parents.get(id(n))
        held = modules.get(binding_key(n) or "") if isinstance(n, ast.Attribute) else None
        if held in layers and isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load):
            key, call = f"{held}.forward", up if isinstance(up, ast.Call) and up.func is n else None
        elif not (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)):
            continue
        elif n.id in layers:
            made = parents.get(id(up))
            if isinstance(up, ast.Call) and up.func is n and isinstance(made, ast.Assign) and made.value is up and \
                    len(made.targets) == 1 and modules.get(binding_key(made.targets[0]) or "") == n.id:  # fmt: skip
                continue  # self.attr = Cls(...): an instance whose calls are the sites above
            key, call = f"{n.id}.forward", None  # made or handed on anywhere else: its calls are not all seen
        elif n.id in candidates:
            key, call = n.id, up if isinstance(up, ast.Call) and up.func is n else None
        elif f"{n.id}.forward" in candidates:
            key, call = f"{n.id}.forward", None
            if isinstance(up, ast.Attribute) and up.attr == "apply":
                apply_call = parents.get(id(up))
                call = apply_call if isinstance(apply_call, ast.Call) and apply_call.func is up else None
            elif use_of(n, parents) is Use.TYPE_CHECK:
                continue  # isinstance(x, Cls)
        else:
            continue
        where = _enclosing_key(call, parents, keys) if call is not None else None
        if call is None or _in_loop(call, parents) or where == key:
            sites[key].append(None)  # handed on, called in a loop or by itself: may run any number of times
        else:
            sites[key].append(where)
    classes = frozenset(c.name for c in tree.body if isinstance(c, ast.ClassDef))
    once = {k for k in candidates | {entry_forward or f"{entry}.forward", entry} if k in functions
            and k not in reaches(k) and not _calls_itself(k, functions[k], classes)}  # fmt: skip
    changed = True
    while changed:
        changed = False
        for key in list(once):
            if key in candidates and any(w is None or (w != "" and w not in once) for w in sites[key]):
                once.discard(key)
                changed = True
        if not changed:  # and at most MAX_RUNS times per forward call in all: call sites in a row add up
            runs = _runs(once, sites, candidates)
            over = {k for k in once if runs.get(k, 1) > MAX_RUNS}
            once -= over
            changed = bool(over)
    return once


def _calls_itself(key: str, fn: ast.AST, classes: frozenset[str] = frozenset()) -> bool:
    """``fn`` (function ``key``) calls itself by its own name: ``f(...)`` in ``f``, ``self.m(...)`` /
    ``type(self).m`` / ``super(Sub, self).m`` / ``Cls.m`` (any class of the file, ``classes``: a subclass's name
    reaches an inherited method) in method ``Cls.m``, or ``self(...)`` in a ``forward`` (recursion: chunk after
    chunk of its input, each under the run time's size limit; red team s32, and s33's inherited forward)."""
    cls, _, name = key.rpartition(".")
    for node in ast.walk(fn):
        if not cls and isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id == name:
            return True
        if cls and isinstance(node, ast.Attribute) and node.attr == name and (
                _is_self_or_class(node.value, cls) or (isinstance(node.value, ast.Name) and node.value.id in classes)
                or _super_from_below(node.value, cls)):  # fmt: skip
            return True  # self.forward, type(self).forward, super(ModelNew, self).forward, Cls.forward
        if cls and name == "forward" and isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "self":  # fmt: skip
            return True
    return False


def _super_from_below(node: ast.AST, cls: str) -> bool:
    """``super(X, self)`` with ``X`` another class than ``cls`` (a subclass's name, in a method ``cls`` defines: the
    lookup starts below ``cls`` and may find the method itself again); ``super()`` starts above ``cls``."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super" and \
        bool(node.args) and not (isinstance(node.args[0], ast.Name) and node.args[0].id == cls)


def _is_self_or_class(node: ast.AST, cls: str) -> bool:
    return (isinstance(node, ast.Name) and node.id in ("self", cls)) or type_of_self(node)


def _runs(once: set[str], sites: Mapping[str, list[str | None]], candidates: set[str]) -> dict[str, int]:
    """How many times each function of ``once`` runs per forward call at most: the entry once, a function as many
    times as its call sites' functions run, summed (a call at import runs at no forward call)."""
    runs: dict[str, int] = {}

    def count(key: str, seen: frozenset[str]) -> int:
        if key not in candidates:
            return 1  # the entry point
        if key not in runs:
            runs[key] = sum(0 if w == "" else count(w, seen | {key}) if w not in seen else MAX_RUNS + 1
                            for w in sites[key] if w is not None)  # fmt: skip
        return runs[key]

    for key in once:
        count(key, frozenset())
    return runs


class Bookkeeping:
    """The masks and kernel-written buffers of one function, and the decision for each call in it."""

    def __init__(self, fn: FunctionNode, resolve: Resolve, launched_args: set[str],
                 parents: dict[int, ast.AST], *, runs_once: bool = False,
                 own: frozenset[str] = frozenset(), autograd: frozenset[str] = frozenset(),
                 helpers: frozenset[str] = frozenset()) -> None:  # fmt: skip
        """``own``: the file's module functions that launch its kernels; ``autograd``: its ``torch.autograd.Function``
        classes that do; ``helpers``: every module function of the file."""
        self.resolve, self.parents, self.runs_once = resolve, parents, runs_once
        self.own, self.autograd, self.helpers = own, autograd, helpers
        bindings = _bindings(fn)
        self.masks = {n for n, vs in bindings.items() if vs and all(self._comparison(v) for v in vs)}
        self.buffers = {n for n, vs in bindings.items() if n in launched_args and vs and
                        all(self._allocation(v) for v in vs)}  # fmt: skip
        self.results = self._results(bindings)

    def _results(self, bindings: dict[str, list[ast.expr | None]]) -> set[str]:
        """Names only ever bound to what the file's own code returns, an item of it, or a scalar computed from such
        names by full reductions and arithmetic (``loss = loss.sum() / (target != ignore).sum()``): the largest such
        set, so a name rebound from itself is one when all its bindings are."""
        names = {n for n, vs in bindings.items() if vs and all(v is not None for v in vs)}
        while True:
            kept = {n for n in names if all(self._own_result(v) or self._scalar_of(v, names) or self._reshaped(v, names)
                                            for v in bindings[n])}
            if kept == names:
                return names
            names = kept

    def _reshaped(self, value: ast.expr | None, names: set[str]) -> bool:
        """A view or cast of one of ``names`` (``losses.view(-1)``), or what one of the file's helpers returns when
        every argument it gets is one of ``names`` (``_as_1d(losses)``): still the kernels' values."""
        if not isinstance(value, ast.Call) or value.keywords and not all(isinstance(k.value, ast.Constant)
                                                                           for k in value.keywords):
            return False
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr in _VIEWS:
            return isinstance(func.value, ast.Name) and func.value.id in names and \
                all(isinstance(a, ast.Constant | ast.UnaryOp) for a in value.args)
        return isinstance(func, ast.Name) and func.id in self.helpers and bool(value.args) and \
            all((isinstance(a, ast.Name) and a.id in names) or self._own_result(a) for a in value.args)

    def _scalar_of(self, value: ast.expr | None, names: set[str]) -> bool:
        """Arithmetic over constants, ``names`` and full reductions of ``names``, masks and comparisons."""
        if isinstance(value, ast.Constant):
            return isinstance(value.value, int | float) and not isinstance(value.value, bool)
        if isinstance(value, ast.Name):
            return value.id in names
        if isinstance(value, ast.BinOp):
            return isinstance(value.op, ast.Add | ast.Sub | ast.Mult | ast.Div | ast.FloorDiv) and \
                self._scalar_of(value.left, names) and self._scalar_of(value.right, names)
        if isinstance(value, ast.UnaryOp):
            return isinstance(value.op, ast.USub | ast.UAdd) and self._scalar_of(value.operand, names)
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in REDUCTIONS
                and not value.args and all(k.arg == "dtype" for k in value.keywords)):
            return False
        operand = value.func.value
        return self._comparison(operand) or (isinstance(operand, ast.Name) and
                                             (operand.id in names or operand.id in self.masks)) or \
            self._own_result(operand) or self._reshaped(operand, names)

    def _own_result(self, value: ast.expr | None) -> bool:
        """What one of the file's functions or autograd Functions returns (``f(...)``, ``Fn.apply(...)``), or an item
        of it (``f(...)[0]``)."""
        if isinstance(value, ast.Subscript):
            value = value.value
        if not isinstance(value, ast.Call):
            return False
        func = value.func
        if isinstance(func, ast.Name):
            return func.id in self.own
        return isinstance(func, ast.Attribute) and func.attr == "apply" and isinstance(func.value, ast.Name) and \
            func.value.id in self.autograd

    @staticmethod
    def _comparison(value: ast.expr | None) -> bool:
        return isinstance(value, ast.Compare) and len(value.ops) == 1 and isinstance(value.ops[0], _COMPARE_OPS)

    def _allocation(self, value: ast.expr | None) -> bool:
        if isinstance(value, ast.IfExp):
            sides = [value.body, value.orelse]
            return all(self._allocation(s) or (isinstance(s, ast.Constant) and s.value is None) for s in sides) and \
                any(not isinstance(s, ast.Constant) for s in sides)  # fmt: skip
        if not isinstance(value, ast.Call):
            return False
        if self.resolve(value.func) in _ALLOCATIONS:
            return True
        return isinstance(value.func, ast.Attribute) and value.func.attr in _NEW_METHODS

    def allows(self, call: ast.Call, op: str, operand: ast.AST, *, method: bool) -> bool:
        """True when ``call`` (``operand.op(...)`` or ``torch.op(operand, ...)``) is bookkeeping (module docstring)."""
        if any(k.arg == "out" or k.arg is None for k in call.keywords) or op.endswith("_"):
            return False
        args = call.args if method else call.args[1:]
        if any(isinstance(a, ast.Starred) for a in call.args):
            return False
        if op in REDUCTIONS:
            shape_ok = not args and all(k.arg == "dtype" for k in call.keywords)
        elif op in COMPARISONS:
            shape_ok = len(args) == 1 and not call.keywords
        else:
            return False
        if not shape_ok:
            return False
        if self._in_assert(call):
            return True
        if not self.runs_once or _in_loop(call, self.parents):
            return False
        if isinstance(operand, ast.expr) and self._comparison(operand):
            return True  # (target != ignore_index).sum(): a mask written in place
        if isinstance(operand, ast.Call | ast.Subscript) and (self._own_result(operand) or
                                                              self._reshaped(operand, self.results)):
            return True  # ce_rows(logits, target).sum(): what a launcher of the file returns, reduced in place
        return isinstance(operand, ast.Name) and (operand.id in self.masks or operand.id in self.buffers or
                                                  operand.id in self.results)

    def counted(self, call: ast.Call) -> bool:
        """True when an allowed ``call`` is one of the capped mask/buffer sites (not an assert)."""
        return not self._in_assert(call)

    def _in_assert(self, node: ast.AST) -> bool:
        child, parent = node, self.parents.get(id(node))
        while parent is not None:
            if isinstance(parent, ast.Assert):
                return True
            if isinstance(parent, _ASSERT_PATH):
                pass
            elif isinstance(parent, ast.Attribute) and parent.attr == "item" and parent.value is child:
                pass
            elif isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) and \
                    parent.func.attr == "item" and parent.func is child and not parent.args:  # fmt: skip
                pass
            else:
                return False
            child, parent = parent, self.parents.get(id(parent))
        return False
