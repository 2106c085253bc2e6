"""The AST walk of the static checker: one pass over a candidate that reports rule violations.

Rules checked everywhere in the file: imports (allowlist), dangerous builtins, introspection (dunders),
private APIs, patching of imported modules, stream/graph/device-state calls, tensor subclasses, and use
of the reference ``Model``. Rules checked only on the forward path (the functions the entry point can
reach, outside ``@triton.jit`` kernels): PyTorch compute ops and ``try`` fallbacks.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from evaluator.static_model import (
    ModuleModel,
    binding_key,
    bound_names,
    is_const_getattr,
    is_import_only_try,
    resolve,
)
from evaluator.static_rules import (
    ALLOWED_DUNDER_DEFS,
    ALLOWED_DUNDERS,
    ALLOWED_SUMMARY,
    DANGEROUS_BUILTINS,
    FILE_IO_METHODS,
    TENSOR_BASES,
    classify_name,
    method_computes,
    module_allowed,
    torch_computes,
    why_module,
)

_COMPUTE_HINT = (
    "do this math inside your kernel; PyTorch may only allocate (torch.empty/empty_like), view, "
    "reshape and cast on the forward path"
)

Report = Callable[[str, ast.AST, str], None]


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


class RuleVisitor(ast.NodeVisitor):
    """Walks a parsed candidate and calls ``report(rule, node, message)`` for each violation."""

    def __init__(self, model: ModuleModel, forward_path: set[str], entry: str, allow: frozenset[str],
                 report: Report) -> None:  # fmt: skip
        self.model, self.forward_path, self.entry, self.allow, self.report = (
            model, forward_path, entry, allow, report
        )  # fmt: skip
        self.scopes: list[set[str]] = []
        self.in_forward = False
        self.in_jit = False
        self.cls: str | None = None  # enclosing module-level class
        self.depth = 0  # 0 at module level
        self._inner: set[int] = set()  # ids of nodes inside an attribute chain already checked
        self._called: set[int] = set()  # ids of expressions that are called
        self._torch_locals: dict[str, str] = {}  # loop variables over torch.nn containers -> container

    # -- helpers ---------------------------------------------------------------------------------
    def _bound(self, name: str) -> bool:
        return any(name in scope for scope in self.scopes)

    def _compute_rules(self) -> bool:
        return self.in_forward and not self.in_jit

    def _scoped(self, node: ast.AST, children: list[ast.AST]) -> None:
        self.scopes.append(bound_names(node))
        for child in children:
            self.visit(child)
        self.scopes.pop()

    def _check_dotted(self, node: ast.AST, dotted: str, ctx: ast.expr_context) -> None:
        chain = node.value if isinstance(node, ast.Attribute) else node.args[0] if isinstance(node, ast.Call) else None  # noqa: E501
        while chain is not None:
            self._inner.add(id(chain))
            chain = (chain.value if isinstance(chain, ast.Attribute)
                     else chain.args[0] if is_const_getattr(chain) else None)  # fmt: skip
        if not isinstance(ctx, ast.Load):
            self.report("patching", node, f"assigns or deletes `{dotted}`, an attribute of an imported "
                        "module; never patch torch/triton/time attributes, keep state on `self` instead")
            return
        hit = classify_name(dotted)
        if hit is not None:
            rule, why = hit
            self.report(rule, node, f"`{dotted}` {why}; remove it" + (
                " (use kernelevo.cuda / load_inline launches on PyTorch's current stream)"
                if rule == "stream-or-state" else ""))  # fmt: skip
        elif self.in_jit:
            return
        elif id(node) not in self._called and torch_computes(dotted, called=False, allow=self.allow):
            self.report("torch-compute", node, f"keeps a reference to PyTorch op `{dotted}` (to call it "
                        f"later); {_COMPUTE_HINT}")
        elif self.in_forward and torch_computes(dotted, called=True, allow=self.allow):
            self.report("torch-compute", node, f"forward path calls PyTorch op `{dotted}`; {_COMPUTE_HINT}")

    # -- definitions -----------------------------------------------------------------------------
    def visit_Module(self, node: ast.Module) -> None:
        self._scoped(node, node.body)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for child in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            self.visit(child)
        for base in node.bases:
            dotted = resolve(base, self.model.aliases) or ""
            if dotted in TENSOR_BASES or (dotted.startswith("torch.") and dotted.endswith("Tensor")):
                self.report("tensor-subclass", base, f"class {node.name} subclasses {dotted}; remove it and "
                            "return plain torch.Tensor outputs (subclasses can defer or fake the work)")
        if self.depth == 0 and node.name == self.entry:
            bases = [resolve(b, self.model.aliases) for b in node.bases]
            if bases != ["torch.nn.Module"] or node.keywords:
                self.report("reference", node, f"class {node.name} must subclass nn.Module only (found "
                            f"{', '.join(ast.unparse(b) for b in node.bases) or 'no base'}); do not inherit "
                            "from the reference Model or anything else")
        outer = self.cls
        if self.depth == 0:
            self.cls = node.name
        self.depth += 1
        self._scoped(node, node.body)
        self.depth -= 1
        self.cls = outer

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        if not isinstance(node, ast.Lambda):
            outer_forward = self.in_forward
            # autotune/heuristics hooks and lambdas in a Triton kernel's decorators run at every launch
            self.in_forward |= self.depth == 0 and node.name in self.model.jit_kernels
            for child in node.decorator_list:
                self.visit(child)
            self.in_forward = outer_forward
            if _is_dunder(node.name) and node.name not in ALLOWED_DUNDER_DEFS:
                self.report("introspection", node, f"defines special method {node.name}; remove it: candidates "
                            "may define only __init__, forward and plain helpers (no operator or hook overrides)")
        saved = (self.in_forward, self.in_jit, self._torch_locals)
        self._torch_locals = dict(self._torch_locals)
        if not isinstance(node, ast.Lambda) and (self.depth == 0 or (self.depth == 1 and self.cls is not None)):
            name = getattr(node, "name", "")
            key = name if self.depth == 0 else f"{self.cls}.{name}"
            self.in_forward = key in self.forward_path
            self.in_jit = key in self.model.jit_kernels
        # Defaults are evaluated once, but the function body uses them: check them as part of it.
        for child in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
            self.visit(child)
        self.depth += 1
        body = node.body if isinstance(node.body, list) else [node.body]
        self._scoped(node, list(body))
        self.depth -= 1
        self.in_forward, self.in_jit, self._torch_locals = saved

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _visit_function

    def _visit_comprehension(self, node: ast.AST) -> None:
        self._scoped(node, list(ast.iter_child_nodes(node)))

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _visit_comprehension

    # -- imports ---------------------------------------------------------------------------------
    def _check_module(self, node: ast.AST, module: str) -> bool:
        hit = classify_name(module)
        if hit is not None:
            self.report(hit[0], node, f"import of `{module}`: it {hit[1]}; remove it")
            return False
        if not module_allowed(module):
            self.report("banned-import", node, f"import of `{module}` is not allowed: it {why_module(module)}. "
                        f"Candidates may import only {ALLOWED_SUMMARY}")
            return False
        return True

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_module(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            self.report("banned-import", node, "relative import: a candidate is a single file; import only "
                        f"{ALLOWED_SUMMARY}")
            return
        for alias in node.names:
            full = f"{node.module}.{alias.name}"
            if alias.name == "*":
                self.report("banned-import", node, f"`from {node.module} import *` hides which names are "
                            "used; import the names you need explicitly")
            elif module_allowed(full):
                continue
            elif self._check_module(node, node.module):
                hit = classify_name(full)
                if hit is not None:
                    self.report(hit[0], node, f"import of `{full}`: it {hit[1]}; remove it")

    # -- names and attributes --------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            return
        name = node.id
        if name in DANGEROUS_BUILTINS and not self._bound(name) and name not in self.model.aliases:
            self.report("dangerous-builtin", node, f"uses builtin `{name}`, which {DANGEROUS_BUILTINS[name]}; "
                        "remove it")
        elif _is_dunder(name) and name not in ALLOWED_DUNDERS:
            self.report("introspection", node, f"uses `{name}`, which introspects the module or the "
                        "interpreter; remove it (candidates must not look at the harness)")
        elif name == "Model":
            self.report("reference", node, "uses `Model`, the task's reference implementation; compute the "
                        "result with your own kernels instead")
        elif id(node) not in self._inner and name in self.model.aliases:
            self._check_dotted(node, self.model.aliases[name], node.ctx)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if _is_dunder(node.attr) and node.attr not in ALLOWED_DUNDERS:
            self.report("introspection", node, f"accesses `{node.attr}`, which introspects objects or "
                        "modules; remove it (candidates must not look at the harness or rewire objects)")
        if id(node) not in self._inner:
            dotted = resolve(node, self.model.aliases)
            if dotted is not None:
                self._check_dotted(node, dotted, node.ctx)
        self.generic_visit(node)

    # -- calls and operators ---------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        self._called.add(id(node.func))
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr" and not self._bound("getattr"):
            name_arg = node.args[1] if len(node.args) > 1 else None
            if not is_const_getattr(node) or name_arg.value.startswith("_"):  # type: ignore[union-attr]
                self.report("dangerous-builtin", node, "getattr with a computed or private attribute name "
                            "hides what the code touches; use plain attribute access")
            elif id(node) not in self._inner:
                dotted = resolve(node, self.model.aliases)
                if dotted is not None:
                    self._check_dotted(node, dotted, ast.Load())
        if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "type":
            if not self._bound("type"):
                self.report("introspection", node, "`type(obj)(...)` builds a new object of another object's "
                            "type (a new stream, a fake tensor); remove it and construct what you need directly")
        if isinstance(func, ast.Attribute) and func.attr in FILE_IO_METHODS:
            if resolve(func, self.model.aliases) is None:  # module functions are judged by their dotted name
                self.report("banned-import", node, f"`.{func.attr}()` does file I/O; remove it (candidates "
                            "read and write only tensors)")
        if resolve(func, self.model.aliases) in ("operator.methodcaller", "operator.attrgetter"):
            self._check_named_getter(node)
        if self._compute_rules():
            self._check_call_compute(node)
        self.generic_visit(node)

    def _check_named_getter(self, node: ast.Call) -> None:
        """operator.methodcaller("sum") / attrgetter("x.exp") are getattr by another name."""
        for arg in node.args[:1] if isinstance(node.func, ast.Attribute) and node.func.attr == "methodcaller" \
                else node.args:  # fmt: skip
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                self.report("dangerous-builtin", node, "operator.methodcaller/attrgetter with a computed name "
                            "hides what the code touches; use plain attribute access")
                continue
            for part in arg.value.split("."):
                if part.startswith("_"):
                    self.report("dangerous-builtin", node, f"operator getter reaches private `{part}`; remove it")
                elif method_computes(part, self.allow):
                    self.report("torch-compute", node, f"operator getter calls tensor method `.{part}()`; "
                                f"{_COMPUTE_HINT}")

    def _check_call_compute(self, node: ast.Call) -> None:
        func = node.func
        key = binding_key(func)
        instance = self.model.instances.get(key or "", "")
        if isinstance(func, ast.Name) and func.id in self._torch_locals:
            instance = self._torch_locals[func.id]
        if isinstance(func, ast.Subscript):  # self.layers[0](x) on an nn.ModuleList / Sequential
            instance = self.model.instances.get(binding_key(func.value) or "", "") or instance
        if isinstance(func, ast.Attribute) and func.attr == "forward":
            instance = self.model.instances.get(binding_key(func.value) or "", "") or instance
        if instance.startswith("torch."):
            self.report("torch-compute", node, f"forward path calls `{ast.unparse(func)}`, a PyTorch module "
                        f"({instance}); use its parameters in your kernel instead of calling it")
            return
        if isinstance(func, ast.Attribute):
            owner_node, method = func.value, func.attr
        elif is_const_getattr(func):
            owner_node, method = func.args[0], func.args[1].value  # type: ignore[attr-defined]
        else:
            return
        if resolve(func, self.model.aliases) is not None:
            return  # a module function: judged by its dotted name
        owner = binding_key(owner_node) or ""
        if owner in self.model.extensions or owner in self.model.launchables:
            return
        if isinstance(owner_node, ast.Call) and isinstance(owner_node.func, ast.Name):
            if owner_node.func.id in self.model.factories:
                return  # ext_factory().fn(...): a launch
        if self.model.instances.get(owner, "").startswith("builtin:"):
            return  # a Python container method (set.add, list.sort)
        if owner == "self" and self.cls is not None and f"{self.cls}.{method}" in self.model.functions:
            return
        if method_computes(method, self.allow):
            self.report("torch-compute", node, f"forward path calls tensor method `.{method}()`; "
                        f"{_COMPUTE_HINT}")

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.MatMult) and self._compute_rules() and "matmul" not in self.allow:
            self.report("torch-compute", node, f"forward path uses the `@` operator (torch.matmul); {_COMPUTE_HINT}")
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.op, ast.MatMult) and self._compute_rules() and "matmul" not in self.allow:
            self.report("torch-compute", node, f"forward path uses `@=` (torch.matmul); {_COMPUTE_HINT}")
        self.generic_visit(node)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        # for layer in self.layers: layer(x)  -- each layer of an nn.ModuleList / Sequential is a torch module
        owner = self.model.instances.get(binding_key(node.iter) or "", "")
        if owner.startswith("torch.") and isinstance(node.target, ast.Name):
            self._torch_locals[node.target.id] = owner
        self.generic_visit(node)

    visit_AsyncFor = visit_For

    # -- control flow ----------------------------------------------------------------------------
    def visit_Try(self, node: ast.Try) -> None:
        if self._compute_rules() and not is_import_only_try(node):
            self.report("try-fallback", node, "try statement on the forward path: a failing kernel must fail "
                        "loudly, not fall back to another implementation; remove the try/except")
        self.generic_visit(node)

    visit_TryStar = visit_Try
