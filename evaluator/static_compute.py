"""PyTorch compute and host-side work on the forward path (a mixin of the rule visitor).

A call on the forward path is compute when it is a torch op (``x.sum()``, ``self.fc(x)`` on an nn module)
or when it hands tensor data to Python: ``.tolist()``, ``.numpy()``, ``.apply_()``, ``new_tensor``,
storages, and element-by-element reads in a loop (``.item()``, ``float(t[i])``, ``float(v) for v in x``),
where the math would run on the host, unseen by the dispatcher. Loops over shapes, ranges, literals and
Python containers are not element reads.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Protocol

from evaluator.static_lookups import COMPUTE_HINT
from evaluator.static_model import ModuleModel, binding_key, const_getattr, scope_bindings
from evaluator.static_paths import self_owners
from evaluator.static_rules import HOST_CONVERSION_METHODS, method_computes
from evaluator.static_structure import entry_chain, inherited_forward

_HOST_HINT = (
    "it copies tensor data to the host (Python/numpy), where the math would run unseen; do the work in your "
    "kernel instead and keep data in tensors"
)


_WRAPPERS = frozenset({"range", "enumerate", "zip", "reversed", "sorted", "list", "tuple"})
# Methods whose results hold Python values: shapes and strides, dict views, module parameter listings.
_PYTHON_ITERABLES = frozenset({"size", "stride", "items", "keys", "values", "named_parameters", "parameters"})


class _BookkeepingTest(Protocol):
    """``RuleVisitor._is_bookkeeping``: may this reduction stay on the forward path."""

    def __call__(self, call: ast.Call, op: str, operand: ast.AST, *, method: bool) -> bool: ...


class ComputeRules:
    """Mixed into ``RuleVisitor``: uses its model, scopes, loop depth, ``report``, ``_exempt_owner`` and
    ``_is_bookkeeping`` (``evaluator.static_bookkeeping``)."""

    # Provided by the host visitor (``evaluator.static_visitor.RuleVisitor``).
    model: ModuleModel
    allow: frozenset[str]
    cls: str | None  # enclosing module-level class
    loops: int  # loops and comprehensions around the current node, inside the current function
    _torch_locals: dict[str, str]  # loop variables over torch.nn containers -> container
    _element_vars: set[str]  # loop variables that may be tensor elements (for v in x)
    report: Callable[[str, ast.AST, str], None]
    _bound: Callable[[str], bool]
    _resolve: Callable[[ast.AST], str | None]
    _exempt_owner: Callable[[ast.AST, str], bool]
    _is_bookkeeping: _BookkeepingTest

    def _check_call_compute(self, node: ast.Call) -> None:  # noqa: C901 - one case per call shape
        func = node.func
        key = binding_key(func)
        instance = self.model.instances.get(key or "", "")
        if isinstance(func, ast.Name) and func.id in self._torch_locals:
            instance = self._torch_locals[func.id]
        if isinstance(func, ast.Subscript):  # self.layers[0](x) on an nn.ModuleList / Sequential
            instance = self.model.instances.get(binding_key(func.value) or "", "") or instance
        if isinstance(func, ast.Attribute) and func.attr == "forward":
            instance = self.model.instances.get(binding_key(func.value) or "", "") or instance
        inherited = inherited_forward(self.model, instance[6:]) if instance.startswith("class:") else None
        if instance.startswith("torch.") or inherited is not None:
            self.report("torch-compute", node, f"forward path calls `{ast.unparse(func)}`, a PyTorch module "
                        f"({inherited or instance}); use its parameters in your kernel instead of calling it")
            return
        if self._own_module(func, instance):
            return  # self.norm(x) on a module of this file: its forward is on the path, judged as this file's code
        if isinstance(func, ast.Name) and func.id in ("float", "int", "complex", "bool") and self.loops and \
                not self._bound(func.id) and len(node.args) == 1 and self._element_like(node.args[0]):  # fmt: skip
            self.report("torch-compute", node, f"`{func.id}(...)` of a tensor element in a loop computes element "
                        f"by element on the host; {_HOST_HINT}")
            return
        if isinstance(func, ast.Attribute):
            owner_node, method = func.value, func.attr
        elif (lookup := const_getattr(func)) is not None:
            owner_node, method = lookup
        else:
            return
        if self._resolve(func) is not None:
            return  # a module function: judged by its dotted name
        if self._exempt_owner(owner_node, method):
            return
        if method in HOST_CONVERSION_METHODS:
            self.report("torch-compute", node, f"forward path calls `.{method}()`: {_HOST_HINT}")
        elif method == "item" and self.loops:
            self.report("torch-compute", node, f"forward path calls `.item()` in a loop, computing element by "
                        f"element on the host; {_HOST_HINT}")
        elif method_computes(method, self.allow) and not self._is_bookkeeping(node, method, owner_node, method=True):
            self.report("torch-compute", node, f"forward path calls tensor method `.{method}()`; "
                        f"{COMPUTE_HINT}")

    def _own_module(self, func: ast.AST, instance: str) -> bool:
        """``func`` is an attribute bound once in the file, to an instance of one of the file's own nn.Module classes
        (one base each down to ``nn.Module``): calling it runs that class's forward, not a tensor method of the same
        name (``self.softmax = TemperatureSoftmax(t)``, ``self.norm = RMSNorm(d)``)."""
        if not (isinstance(func, ast.Attribute) and instance.startswith("class:") and binding_key(func) is not None
                and isinstance(func.value, ast.Name) and func.value.id == "self"):
            return False
        method = self._enclosing_method(func)
        cls = self.model.classes.get(instance.removeprefix("class:"))
        # bound once (no add_module/setattr by a name in a string, no class attribute of that name shadowing it), read
        # in a method where self is the instance
        return method is not None and self.model.attribute_stores.get(f"self.{func.attr}") == 1 and \
            func.attr not in self.model.strings and not self._class_binds(func.attr) and cls is not None and \
            entry_chain(self.model, cls) is not None

    def _enclosing_method(self, node: ast.AST) -> ast.AST | None:
        """The def ``node`` stands in when it is a method of a module-level class whose first parameter is ``self``."""
        parent = self.model.parents.get(id(node))
        while parent is not None and not isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            parent = self.model.parents.get(id(parent))
        if not isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef):
            return None
        params = [*parent.args.posonlyargs, *parent.args.args]
        owner = self.model.parents.get(id(parent))
        return parent if params and params[0].arg == "self" and isinstance(owner, ast.ClassDef) and \
            self.model.classes.get(owner.name) is owner else None

    def _class_binds(self, name: str) -> bool:
        """A class body that ``self`` may be an instance of binds ``name`` (the enclosing class, the file's classes it
        derives from, those deriving from it and their other bases): a class attribute is found before the
        instance's module. Unknown where: any class body of the file."""
        owners = self_owners(self.model, self.cls) if self.cls in self.model.classes else list(self.model.classes)
        return any(bound == name for owner in owners if isinstance(cls := self.model.classes.get(owner), ast.ClassDef)
                   for bound, _ in scope_bindings(cls))

    def _element_like(self, node: ast.AST) -> bool:
        """``t[i]`` or a loop variable over something that may be a tensor (``for v in x.view(-1)``)."""
        if isinstance(node, ast.Subscript):
            return not self._shape_like(node.value)
        return isinstance(node, ast.Name) and node.id in self._element_vars

    def _shape_like(self, node: ast.AST) -> bool:
        """Iterables that hold Python values, never tensor elements: shapes, ranges, literals, containers."""
        if isinstance(node, ast.Tuple | ast.List | ast.Set | ast.Constant):
            return True
        if isinstance(node, ast.Attribute) and node.attr in ("shape", "__name__"):
            return True
        if isinstance(node, ast.Subscript):
            return self._shape_like(node.value)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in _WRAPPERS:
                return func.id == "range" or all(self._shape_like(a) for a in node.args)
            if isinstance(func, ast.Attribute) and func.attr in _PYTHON_ITERABLES:
                return True
        key = binding_key(node) or ""
        return self.model.instances.get(key, "").startswith("builtin:")

    def _track_loop_target(self, target: ast.AST, iterable: ast.AST) -> None:
        names = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        if self._shape_like(iterable):
            self._element_vars -= names
        else:
            self._element_vars |= names
