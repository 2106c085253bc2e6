"""The AST walk of the static checker: one pass over a candidate that reports rule violations.

Rules checked everywhere in the file: imports (allowlist) and every ``module.member`` chain (where it
really leads), dangerous builtins and any use of a name-lookup builtin other than a direct call with a
literal name, introspection (dunders), private APIs, patching of imported modules, stream/graph/device
state, modules or tensor methods handed around as values, tensor subclasses, annotations that are code,
and the reference ``Model``. Rules checked only on the forward path (the functions the entry point can
reach, every lambda, and nested functions that escape; outside ``@triton.jit`` kernels): PyTorch compute
ops, host-side conversions of tensor data, and ``try`` fallbacks.

Names are resolved per scope: a parameter or local variable named like an imported module (``operator``)
is that local, not the module.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Sequence

from evaluator.static_absent import absent_attribute, needs_absent, owner_root, single_import_names
from evaluator.static_annotations import ModuleNames, check_annotation
from evaluator.static_bookkeeping import MAX_SITES, Bookkeeping, run_once_functions
from evaluator.static_compute import ComputeRules
from evaluator.static_dormant import dormant_imports, type_checking_names
from evaluator.static_library import custom_op_key
from evaluator.static_liveness import (
    Branches,
    Known,
    inert_decorators,
    liveness,
    local_flags,
    none_reached,
    parameter_facts,
)
from evaluator.static_loggers import plain_loggers
from evaluator.static_lookups import COMPUTE_HINT, KERNEL_BUILDERS, LITERAL_CALLS, LOOKUP_ATTRS, LookupRules
from evaluator.static_model import (
    Comprehension,
    ModuleModel,
    Scope,
    binding_key,
    bound_names,
    chain_root,
    const_getattr,
    device_functions,
    is_import_only_try,
    resolve,
    scope_bindings,
)
from evaluator.static_optional import (
    IMPORT_MODULE,
    MODULES_GET,
    absent_module_lookup,
    always_fails,
    failing_import_module,
    imported_module,
    optional_import,
    version_probe,
)
from evaluator.static_paths import callees, launch_sites, reachable
from evaluator.static_probes import Probes
from evaluator.static_repr import formats_own_fields
from evaluator.static_rules import (
    ALLOWED_DUNDER_DEFS,
    ALLOWED_DUNDERS,
    ALLOWED_SUMMARY,
    DANGEROUS_BUILTINS,
    FILE_IO_METHODS,
    IMPORTABLE_FROM_REFUSED,
    PROBE_OWNERS,
    PROBED_NAMESPACES,
    TENSOR_BASES,
    classify_name,
    module_allowed,
    torch_computes,
    why_module,
)
from evaluator.static_structure import entry_chain, entry_method
from evaluator.static_unread import NAMESPACE_HANDLES
from evaluator.static_uses import (
    Use,
    enclosing_scope,
    in_annotation,
    in_inert_annotation,
    main_guard,
    name_loads,
    use_of,
)
from kernelevo import pyast

Report = Callable[[str, ast.AST, str], None]
# Rules about what code does when it runs: not applied to code that never runs in the verifier
# (evaluator.static_liveness). Main blocks, DTensor and always-None branches do run where the file is used otherwise
# (a script, a distributed job), so only these three are lifted there; patching, introspection, dangerous builtins,
# private APIs... apply (tests/evaluator/test_static_s6.py).
NEVER_RUN_EXEMPT = frozenset({"banned-import", "torch-compute", "try-fallback"})
# A branch found dead only because a parameter is None at every call (evaluator.static_liveness.none_parameters)
# rests on an inference over every call site: the library code such branches hold (fla's varlen index helpers on
# cu_seqlens) needs PyTorch and fallbacks lifted, never a banned import (what a wrong inference would hand out).
NONE_BRANCH_EXEMPT = frozenset({"torch-compute", "try-fallback"})
# The body of a function nothing running refers to runs nowhere the module runs: a private API reached there is never
# reached (fla's ``ascend_compile_kwargs`` imports ``triton.backends.ascend.compiler`` for NPUs), nor is a computed
# ``getattr`` call made (evaluator.static_lookups). Liveness itself rests on what running code does, where every rule
# applies; decorators and defaults run at definition and are judged as running code.
DEAD_BODY_EXEMPT = NEVER_RUN_EXEMPT | {"private-api"}
# A script's main block (never run where the verifier imports the file) may also seed the generator, as every
# Triton tutorial's test does before comparing with torch.
MAIN_BLOCK_EXEMPT = NEVER_RUN_EXEMPT | {"stream-or-state"}
# A branch that needs an attribute the installed torch/triton lacks (evaluator.static_absent) runs nowhere this
# installation runs: the module attribute it would assign is never assigned (fla aliases ``tl.extra.cann`` as
# ``tl.extra.ascend`` for Ascend's fork). The other patching rules (rebinding an import, decorating the entry class,
# overriding nn.Module methods, hooks: evaluator.static_structure) apply everywhere.
ABSENT_BRANCH_EXEMPT = NEVER_RUN_EXEMPT | {"private-api", "patching"}
# Reads of the candidate's own objects that only give a name: ``self.__class__.__name__``, ``fn.__module__``.
_NAME_DUNDERS = frozenset({"__name__", "__qualname__"})


# Special names a candidate may bind (plain data nothing calls); every other dunder binding is a protocol hook
# (``__eq__ = grab`` hands the other operand to the candidate, a module ``__getattr__`` runs in the harness's lookups).
BINDABLE_DUNDERS = frozenset({"__all__", "__slots__", "__version__", "__doc__"})


def _constant_decorators(node: ast.FunctionDef | ast.AsyncFunctionDef, model: ModuleModel) -> bool:
    """Every decorator is a plain name or a call with constant arguments (``@torch.compile(mode="max-autotune")``):
    a decorator's arguments run at definition even when the function never does (``@torch.compile(backend=
    os.system(...))``), so only constants may be exempt with the function. A tutorial's benchmark declaration,
    ``triton.testing.Benchmark(...)`` of constants, is one too (it only stores them)."""

    def constant(expr: ast.AST, names: frozenset[str] = frozenset()) -> bool:
        if isinstance(expr, ast.Constant) or (isinstance(expr, ast.Name) and expr.id in names):
            return True
        if isinstance(expr, ast.Call) and resolve(expr.func, model.aliases) == "triton.testing.Benchmark":
            return not expr.args and all(k.arg and constant(k.value) for k in expr.keywords)
        if isinstance(expr, ast.BinOp):  # arithmetic of numbers, as a benchmark's sizes are written
            return constant(expr.left, names) and constant(expr.right, names)
        if isinstance(expr, ast.UnaryOp):
            return constant(expr.operand, names)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "range" and \
                "range" not in model.binding_counts:  # fmt: skip
            return not expr.keywords and all(constant(a, names) for a in expr.args)
        if isinstance(expr, ast.ListComp) and len(expr.generators) == 1:
            gen = expr.generators[0]
            inner = names | {gen.target.id} if isinstance(gen.target, ast.Name) else None
            return inner is not None and not gen.is_async and constant(gen.iter, names) and \
                all(constant(c, inner) for c in [expr.elt, *gen.ifs])  # fmt: skip
        if isinstance(expr, ast.Tuple | ast.List | ast.Set):
            return all(constant(e, names) for e in expr.elts)
        if isinstance(expr, ast.Dict):
            return all(k is not None and constant(k, names) for k in expr.keys) and \
                all(constant(v, names) for v in expr.values)  # fmt: skip
        return False

    for dec in node.decorator_list:
        if isinstance(dec, ast.Call):
            if not all(constant(a) for a in dec.args) or not all(k.arg and constant(k.value) for k in dec.keywords):
                return False
            dec = dec.func
        while isinstance(dec, ast.Attribute):
            dec = dec.value
        if not isinstance(dec, ast.Name):
            return False
    return True


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _chain_inner(node: ast.AST) -> ast.expr | None:
    """The next object down an attribute chain: ``a`` of ``a.b`` or of ``getattr(a, "b")``."""
    if isinstance(node, ast.Attribute):
        return node.value
    lookup = const_getattr(node)
    return lookup[0] if lookup is not None else None


def _read_names(tree: ast.Module) -> set[str]:
    """Every name the file reads, string annotations included (torch.library evaluates those in the module)."""
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    for node in ast.walk(tree):
        annotation = node.annotation if isinstance(node, ast.arg | ast.AnnAssign) else getattr(node, "returns", None)
        for sub in ast.walk(annotation) if annotation is not None else ():
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                try:
                    parsed = pyast.parse_expression(sub.value.strip())
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    continue
                names.update(n.id for n in ast.walk(parsed) if isinstance(n, ast.Name))
    return names


def _global_names(scope: ast.AST) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Global):
            out.update(node.names)
    return out


def _imported_here(scope: Scope) -> set[str]:
    """Names ``scope`` binds only by import statements (``def forward(...): import math``): the module the file's
    imports name, not a local value hiding it (``model.aliases`` holds every import of the file, with the others of a
    name that several bind, which the rules check too)."""
    by_name: dict[str, list[ast.AST]] = {}
    for name, node in scope_bindings(scope):
        by_name.setdefault(name, []).append(node)
    return {name for name, nodes in by_name.items() if all(isinstance(n, ast.alias) for n in nodes)}


def _scalar_literal_tensor(call: ast.Call) -> bool:
    """``torch.tensor(<number literal>[, dtype=, device=, requires_grad=])``: a constant scalar, no host data (a
    list of values computed on the host would be the work done unseen, as ``new_tensor`` is)."""
    value = call.args[0] if len(call.args) == 1 else None
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub | ast.UAdd):
        value = value.operand
    return isinstance(value, ast.Constant) and isinstance(value.value, int | float | bool) and \
        all(k.arg in ("dtype", "device", "requires_grad") for k in call.keywords)


class RuleVisitor(LookupRules, ComputeRules, ast.NodeVisitor):
    """Walks a parsed candidate and calls ``report(rule, node, message)`` for each violation."""

    def __init__(self, model: ModuleModel, forward_path: set[str], entry: str, allow: frozenset[str],
                 report: Report, tree: ast.Module | None = None, starts: list[str] | None = None) -> None:  # fmt: skip
        self.model, self.forward_path, self.entry, self.allow, self._sink = (
            model, forward_path, entry, allow, report
        )  # fmt: skip
        self.parents = model.parents
        self.tree = tree or ast.Module(body=[], type_ignores=[])
        # and module-level tables no running code reads (evaluator.static_unread)
        live, self._unread = liveness(self.tree, model, entry, forward_path)
        self.live = live | forward_path
        self.unread_values = 0  # > 0 inside the value of such a table
        self.none_params = parameter_facts(self.tree, model, entry, self.live)
        # functions reached only through branches that never run given those facts: judged as such branches are
        self.none_reached = none_reached(self.tree, model, entry, starts, self.none_params) if starts else set()
        # module-level imports only code that never runs reads (evaluator.static_dormant)
        self._dormant_imports, self._dormant_names = dormant_imports(self.tree, model, self.live)
        bindings = model.binding_counts
        self._file_bindings = set(bindings)
        self._single_imports = single_import_names(self.tree, bindings)
        self.annotation_names = ModuleNames(model.aliases, frozenset(model.classes), model.constants, bindings)
        self._type_checking_names = type_checking_names(self.tree, lambda n: resolve(n, model.aliases))
        self._loaded = _read_names(self.tree)
        self.never_runs = 0  # > 0 inside code that never runs in the verifier
        self.main_blocks = 0  # > 0 inside `if __name__ == "__main__":`
        self.none_branches = 0  # > 0 inside a branch that never runs only because a parameter is always None
        self.optional_imports: list[str] = []  # modules of optional imports in running code (StaticReport)
        self.dead_bodies = 0  # > 0 inside the body of a function nothing running refers to
        self.absent_branches = 0  # > 0 inside a branch that needs an attribute the installation lacks
        self._none = Known()  # parameters of the current function that are always None or a constant, and flags
        self._bookkeeping: Bookkeeping | None = None
        self._bookkeeping_sites: set[int] = set()
        layers = {key: kind.removeprefix("class:") for key, kind in model.instances.items()
                  if kind.startswith("class:") and key.startswith("self.") and model.attribute_stores.get(key) == 1}
        entry_class = model.classes.get(entry)
        self._once = run_once_functions(self.tree, model.functions, model.autograd_functions, entry, model.parents,
                                        lambda key: set(reachable(model, sorted(callees(model, key)))), layers,
                                        entry_method(model, entry_class, "forward") if entry_class else None)
        devices = device_functions(self.tree, model)
        self._device_functions = set(devices)
        self._device_defs = {id(d) for defs in devices.values() for d in defs}
        self._probes = Probes(self._resolve, extra_call=self._version_probe, functions=model.functions,
                              fails=always_fails, decorator_name=self._resolve, parents=model.parents,
                              classes=model.classes,
                              loggers=plain_loggers(self.tree, lambda n: resolve(n, model.aliases)))
        self.scopes: list[set[str]] = []
        self.shadowed: list[set[str]] = []  # imported names rebound in each enclosing function scope
        self.in_forward = False
        self.in_jit = False
        self.loops = 0  # loops and comprehensions around the current node, inside the current function
        self.cls: str | None = None  # enclosing module-level class
        self.depth = 0  # 0 at module level
        self._inner: set[int] = set()  # ids of nodes inside an attribute chain already checked
        self._called: set[int] = set()  # ids of expressions that are called
        self._torch_locals: dict[str, str] = {}  # loop variables over torch.nn containers -> container
        self._element_vars: set[str] = set()  # loop variables that may be tensor elements (for v in x)
        self._own_ops = {op.function for op in model.custom_ops.values() if op.function}

    # -- helpers ---------------------------------------------------------------------------------
    def report(self, rule: str, node: ast.AST, message: str) -> None:
        if self.never_runs and rule in NEVER_RUN_EXEMPT and (rule in NONE_BRANCH_EXEMPT or not self.none_branches):
            return
        if self.main_blocks and rule in MAIN_BLOCK_EXEMPT:
            return
        if (self.dead_bodies and rule in DEAD_BODY_EXEMPT) or (self.absent_branches and rule in ABSENT_BRANCH_EXEMPT):
            return
        self._sink(rule, node, message)

    def _visit_never_running(self, nodes: list[ast.AST], none_branch: bool = False) -> None:
        self.never_runs += 1
        self.none_branches += none_branch
        for child in nodes:
            self.visit(child)
        self.none_branches -= none_branch
        self.never_runs -= 1

    def _version_probe(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and version_probe(node, self.model, self.tree, self.parents)

    def _bound(self, name: str) -> bool:
        return any(name in scope for scope in self.scopes)

    def _is_shadowed(self, name: str) -> bool:
        return any(name in scope for scope in self.shadowed)

    def _resolve(self, node: ast.AST) -> str | None:
        """``resolve`` that respects scopes: a local named like an imported module is not that module."""
        base = chain_root(node)
        if base is None or self._is_shadowed(base.id):
            return None
        return resolve(node, self.model.aliases)

    def _alternatives(self, node: ast.AST, dotted: str) -> list[str]:
        """``dotted`` and what it reads as under the other imports of its base name (try/except imports)."""
        base = chain_root(node)
        others = self.model.alias_alternatives.get(base.id, []) if base is not None else []
        primary = self.model.aliases.get(base.id, "") if base is not None else ""
        return [dotted, *(other + dotted[len(primary):] for other in others if dotted.startswith(primary))]

    def _compute_rules(self) -> bool:
        return self.in_forward and not self.in_jit

    def _use(self, node: ast.AST) -> Use:
        return use_of(node, self.parents)

    def _scoped(self, node: Scope, children: Sequence[ast.AST]) -> None:
        names = bound_names(node)
        self.scopes.append(names)
        function_scope = not isinstance(node, ast.ClassDef | ast.Module)
        if function_scope:
            globals_ = _global_names(node) if not isinstance(node, ast.Lambda) else set()
            self.shadowed.append((names & self.model.imported) - globals_ - _imported_here(node))
        for child in children:
            self.visit(child)
        if function_scope:
            self.shadowed.pop()
        self.scopes.pop()

    def _mark_chain(self, node: ast.AST) -> None:
        chain = node.value if isinstance(node, ast.Attribute) else node.args[0] if isinstance(node, ast.Call) else None  # noqa: E501
        while chain is not None:
            self._inner.add(id(chain))
            chain = _chain_inner(chain)

    def _check_dotted(self, node: ast.AST, dotted: str, ctx: ast.expr_context) -> None:
        self._mark_chain(node)
        if not isinstance(ctx, ast.Load):
            self.report("patching", node, f"assigns or deletes `{dotted}`, an attribute of an imported "
                        "module; never patch torch/triton/time attributes, keep state on `self` instead")
            return
        op = custom_op_key(dotted)
        if op is not None and op in self.model.custom_ops:
            return  # torch.ops.mylib.op: the candidate's own registered operator
        use = self._use(node)
        if dotted in PROBED_NAMESPACES and (use in (Use.TRUTH, Use.LOOKUP_OBJECT) or (
                dotted in PROBE_OWNERS and self._alias_of(node, dotted, use))):  # fmt: skip
            return  # getattr(torch.npu, "amp", None) is not None; utils = triton.runtime.driver.active.utils
        call = self.parents[id(node)] if dotted == IMPORT_MODULE and use is Use.CALLED else None
        if call is not None and (self._version_probe(call) or failing_import_module(call, self.model)):
            return  # pkg = importlib.import_module("triton"); Version(pkg.__version__); or a refused package
        if dotted == MODULES_GET and use is Use.CALLED and absent_module_lookup(self.parents[id(node)], self.model):
            return  # sys.modules.get("fla.utils"): a package never loaded here (evaluator.static_optional)
        hit = classify_name(dotted)
        if hit is not None:
            rule, why = hit
            self.report(rule, node, f"`{dotted}` {why}; remove it" + (
                " (use kernelevo.cuda / load_inline launches on PyTorch's current stream)"
                if rule == "stream-or-state" else ""))  # fmt: skip
            return
        if self._check_value_use(node, dotted, use):
            return
        if self.in_jit:
            return
        if id(node) not in self._called and torch_computes(dotted, called=False, allow=self.allow):
            if self.unread_values:
                return  # kept in a module-level table no running code reads: never called (evaluator.static_unread)
            self.report("torch-compute", node, f"keeps a reference to PyTorch op `{dotted}` (to call it "
                        f"later); {COMPUTE_HINT}")
        elif self.in_forward and torch_computes(dotted, called=True, allow=self.allow):
            call = self.parents.get(id(node))
            if isinstance(call, ast.Call) and call.args and dotted.count(".") == 1 and self._is_bookkeeping(
                    call, dotted.split(".")[1], call.args[0], method=False):  # fmt: skip
                return
            if dotted == "torch.tensor" and isinstance(call, ast.Call) and _scalar_literal_tensor(call):
                return  # torch.tensor(1.0, device=x.device): a constant, as torch.full((), 1.0) would make it
            self.report("torch-compute", node, f"forward path calls PyTorch op `{dotted}`; {COMPUTE_HINT}" + (
                " (a constant scalar: `torch.tensor(<number>, dtype=..., device=...)` or `torch.full((), value)`)"
                if dotted == "torch.tensor" else ""))

    def _is_bookkeeping(self, call: ast.Call, op: str, operand: ast.AST, *, method: bool) -> bool:
        """A bookkeeping call (evaluator.static_bookkeeping); past the file's cap it is refused here instead."""
        book = self._bookkeeping
        if book is None or not book.allows(call, op, operand, method=method):
            return False
        if book.counted(call):
            self._bookkeeping_sites.add(id(call))
            if len(self._bookkeeping_sites) > MAX_SITES:
                self.report("torch-compute", call, f"more than {MAX_SITES} bookkeeping reductions in one file "
                            f"(`{ast.unparse(call)[:60]}`); reductions of masks and kernel buffers are for checks "
                            f"and final scalars, do the math inside your kernel instead")
        return True

    # -- definitions -----------------------------------------------------------------------------
    def visit_Module(self, node: ast.Module) -> None:
        self._scoped(node, node.body)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for child in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            self.visit(child)
        for base in node.bases:
            dotted = self._resolve(base) or ""
            if dotted in TENSOR_BASES or (dotted.startswith("torch.") and dotted.endswith("Tensor")):
                self.report("tensor-subclass", base, f"class {node.name} subclasses {dotted}; remove it and "
                            "return plain torch.Tensor outputs (subclasses can defer or fake the work)")
        if self.depth == 0 and node.name == self.entry:
            bases = [self._resolve(b) for b in node.bases]
            if (bases != ["torch.nn.Module"] or node.keywords) and entry_chain(self.model, node) is None:
                self.report("reference", node, f"class {node.name} must subclass nn.Module, or one class of this "
                            f"file that does, or one of PyTorch's layers while it defines forward itself (found "
                            f"{', '.join(ast.unparse(b) for b in node.bases) or 'no base'}); "
                            "do not inherit from the reference Model or anything else")
        outer, outer_forward = self.cls, self.in_forward
        if self.depth == 0:
            self.cls = node.name
        else:
            self.in_forward = self.in_forward or not self.in_jit  # a class built inside a function: its methods
        self.depth += 1  # can run wherever its instances go
        self._scoped(node, node.body)
        self.depth -= 1
        self.cls, self.in_forward = outer, outer_forward

    def _escapes(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """A nested function that is returned, stored, passed or decorated can run from anywhere; except one a
        module-level factory only returns, where every call of the factory calls what it returns at once
        (Megatron's ``init_method_normal(sigma)(weight)``): it runs only where the factory's calls do."""
        if node.decorator_list:
            return True
        scope = enclosing_scope(node, self.parents)
        loads = [n for n in name_loads(scope, node.name) if self._use(n) is not Use.CALLED]
        if not loads:
            return False
        factory = scope.name if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) else ""
        returned = all(isinstance(self.parents.get(id(n)), ast.Return) and enclosing_scope(n, self.parents) is scope
                       for n in loads)  # fmt: skip
        if not (returned and self.model.functions.get(factory) is scope and self._called_at_once(factory)):
            return True
        return factory in self.forward_path

    def _called_at_once(self, factory: str) -> bool:
        """Every load of the module function ``factory`` in the file is ``factory(...)(...)``, and nothing rebinds
        it: what it returns is never kept."""
        if self.model.binding_counts.get(factory) != 1:
            return False
        for n in name_loads(self.tree, factory):
            call = self.parents.get(id(n))
            outer = self.parents.get(id(call))
            if not (isinstance(call, ast.Call) and call.func is n and isinstance(outer, ast.Call)
                    and outer.func is call):  # fmt: skip
                return False
        return True

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        if not isinstance(node, ast.Lambda):
            outer_forward = self.in_forward
            # autotune/heuristics hooks and lambdas in a Triton kernel's decorators run at every launch
            self.in_forward |= self.depth == 0 and node.name in self.model.jit_kernels
            if self._dead_definition(node) and inert_decorators(node, self.model) and \
                    _constant_decorators(node, self.model):  # fmt: skip
                self._visit_never_running(list(node.decorator_list))  # @torch.compile around a function nobody calls
            else:
                for child in node.decorator_list:
                    self.visit(child)
            self.in_forward = outer_forward
            if _is_dunder(node.name) and node.name not in ALLOWED_DUNDER_DEFS:
                self.report("introspection", node, f"defines special method {node.name}; remove it: candidates "
                            "may define only __init__, forward and plain helpers (no operator or hook overrides)")
            for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.vararg,
                        node.args.kwarg]:  # fmt: skip
                if arg is not None and arg.annotation is not None:
                    check_annotation(arg.annotation, self.annotation_names, self.report, stored=False)
                    self.visit(arg.annotation)
            if node.returns is not None:
                check_annotation(node.returns, self.annotation_names, self.report, stored=False)
                self.visit(node.returns)
        saved = (self.in_forward, self.in_jit, self._torch_locals, self.loops, self._element_vars, self._none,
                 self._bookkeeping)  # fmt: skip
        self._torch_locals, self._element_vars = dict(self._torch_locals), set()
        self.loops = 0
        self._none = Known()
        dead, own_key, by_none = False, None, False
        if isinstance(node, ast.Lambda):
            self.in_forward = not self.in_jit  # a lambda is a value: it can run wherever it is handed
        elif self.depth == 0 or (self.depth == 1 and self.cls is not None):
            name = getattr(node, "name", "")
            key = name if self.depth == 0 else f"{self.cls}.{name}"
            self.in_forward = key in self.forward_path
            self.in_jit = key in self.model.jit_kernels or id(node) in self._device_defs
            if self.model.functions.get(key) is node:
                dead, own_key = key not in self.live, key
                by_none = key in self.none_reached
                self._none = local_flags(node, self.none_params.get(key, Known()), self._resolve)
        elif not self.in_jit:
            self.in_forward = self.in_forward or self._escapes(node)
        self._bookkeeping = self._bookkeeping_of(node, own_key) if self._compute_rules() else None
        # Defaults are evaluated once, but the function body uses them: check them as part of it.
        for child in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
            self.visit(child)
        self.depth += 1
        self.never_runs += dead or by_none
        self.dead_bodies += dead
        self.none_branches += by_none and not dead
        body = node.body if isinstance(node.body, list) else [node.body]
        self._scoped(node, list(body))
        self.never_runs -= dead or by_none
        self.dead_bodies -= dead
        self.none_branches -= by_none and not dead
        self.depth -= 1
        (self.in_forward, self.in_jit, self._torch_locals, self.loops, self._element_vars, self._none,
         self._bookkeeping) = saved  # fmt: skip

    def _dead_definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """A module-level function or method that no code which runs refers to (evaluator.static_liveness)."""
        if self.depth == 0:
            key = node.name
        elif self.depth == 1 and self.cls is not None:
            key = f"{self.cls}.{node.name}"
        else:
            return False
        return self.model.functions.get(key) is node and key not in self.live

    def _bookkeeping_of(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
                        key: str | None) -> Bookkeeping:  # fmt: skip
        launched: set[str] = set()
        for _, call in launch_sites(self.model, node):
            launched.update(a.id for a in [*call.args, *(k.value for k in call.keywords)] if isinstance(a, ast.Name))
        return Bookkeeping(node, self._resolve, launched, self.parents, runs_once=key in self._once,
                           own=self._launchers, autograd=self._launching_autograd,
                           helpers=frozenset(k for k in self.model.functions if "." not in k))

    @functools.cached_property
    def _launchers(self) -> frozenset[str]:
        """The file's module functions that launch one of its kernels, themselves or through what they call: what
        they return is the kernels' (a function returning its argument would pass any tensor off as a result of the
        candidate's own code: red team s32)."""
        return frozenset(k for k in self.model.functions if "." not in k and self._launches(k))

    @functools.cached_property
    def _launching_autograd(self) -> frozenset[str]:
        return frozenset(c for c in self.model.autograd_functions if self._launches(f"{c}.forward"))

    def _launches(self, key: str) -> bool:
        functions = [self.model.functions.get(k) for k in reachable(self.model, [key])]
        return any(next(launch_sites(self.model, fn), None) is not None for fn in functions
                   if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _visit_function

    def _visit_comprehension(self, node: Comprehension) -> None:
        for gen in node.generators:  # the element is visited before them
            self._track_loop_target(gen.target, gen.iter)
        self.loops += 1
        self._scoped(node, list(ast.iter_child_nodes(node)))
        self.loops -= 1

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _visit_comprehension

    def visit_Assign(self, node: ast.Assign) -> None:
        unread = id(node) in self._unread
        self.unread_values += unread
        self.generic_visit(node)
        self.unread_values -= unread

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        check_annotation(node.annotation, self.annotation_names, self.report,
                         stored=not in_inert_annotation(node.annotation, self.parents))
        self.generic_visit(node)

    # -- imports ---------------------------------------------------------------------------------
    def _check_module(self, node: ast.AST, module: str) -> bool:
        hit = classify_name(module)
        if hit is not None:
            self.report(hit[0], node, f"import of `{module}`: it {hit[1]}; remove it")
            return False
        if not module_allowed(module):
            self.report("banned-import", node, f"import of `{module}` is not allowed: {why_module(module)}. "
                        f"Candidates may import only {ALLOWED_SUMMARY}")
            return False
        return True

    def _optional(self, node: ast.Import | ast.ImportFrom) -> bool:
        """An optional import that can never hand the candidate the module (evaluator.static_optional)."""
        if not optional_import(node, self.parents, self._loaded.__contains__):
            return False
        if not (self.never_runs or self.dead_bodies):
            self.optional_imports.extend(imported_module(node, a) for a in node.names)
        return True

    def visit_Import(self, node: ast.Import) -> None:
        if self._optional(node) or id(node) in self._dormant_imports:
            return
        for alias in node.names:
            self._check_module(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            self.report("banned-import", node, "relative import: a candidate is a single file; import only "
                        f"{ALLOWED_SUMMARY}")
            return
        if self._optional(node) or id(node) in self._dormant_imports:
            return
        for alias in node.names:
            full = f"{node.module}.{alias.name}"
            if alias.name == "*":
                self.report("banned-import", node, f"`from {node.module} import *` hides which names are "
                            "used; import the names you need explicitly")
            elif module_allowed(full) or full in IMPORTABLE_FROM_REFUSED:  # from torch.amp import custom_fwd
                continue
            elif self._check_module(node, node.module):
                hit = classify_name(full)
                if hit is not None:
                    self.report(hit[0], node, f"import of `{full}`: it {hit[1]}; remove it")

    # -- names and attributes --------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            if _is_dunder(node.id) and node.id not in BINDABLE_DUNDERS:
                self.report("introspection", node, f"binds `{node.id}`, a special name the interpreter or a library "
                            "calls or reads on its own (`__eq__ = f` in a class, `__getattr__ = f` in the module, "
                            "`__signature__`/`__wrapped__` for inspect); remove it: only `__all__`, `__slots__`, "
                            "`__version__` and `__doc__` may be bound")
            return
        name = node.id
        if name == "super" and not self._bound("super") and not self._super_in_place(node):
            self.report("introspection", node, "`super` kept or handed on (`sup = super()`, `s = super`) hides which "
                        "class's method runs; call it where it stands: `super().method(...)`")
        if name in self._dormant_names:
            return  # read only where nothing runs: a dead body, its annotations, an unnamed class's bases
        if name in self._type_checking_names and in_annotation(node, self.parents):
            return  # unbound at run time, in an annotation nothing evaluates (evaluator.static_dormant)
        builtin = not self._bound(name) and name not in self.model.aliases
        if name in DANGEROUS_BUILTINS and builtin:
            self.report("dangerous-builtin", node, f"uses builtin `{name}`, which {DANGEROUS_BUILTINS[name]}; "
                        "remove it")
        elif name == "getattr" and builtin and self._use(node) is not Use.CALLED:
            self.report("dangerous-builtin", node, "uses `getattr` as a value (an alias, an argument, a "
                        "container entry), which looks attributes up by names the checker cannot see; call "
                        "`getattr(obj, \"name\")` directly or use plain attribute access")
        elif name == "type" and builtin and self._use(node) not in (Use.CALLED, Use.TYPE_CHECK, Use.ANNOTATION):
            self.report("dangerous-builtin", node, "uses `type` as a value, which builds classes at run time; "
                        "remove it")
        elif _is_dunder(name) and name not in ALLOWED_DUNDERS:
            self.report("introspection", node, f"uses `{name}`, which introspects the module or the "
                        "interpreter; remove it (candidates must not look at the harness)")
        elif name == "__name__" and builtin and not self._logger_or_main_test(node):
            self.report("introspection", node, "reads the module's own `__name__`, which says how the module was "
                        "imported (and so whether it runs under the verifier); use it only as "
                        "`logging.getLogger(__name__)` or in `if __name__ == \"__main__\"`")
        elif name == "Model":
            self.report("reference", node, "uses `Model`, the task's reference implementation; compute the "
                        "result with your own kernels instead")
        elif id(node) not in self._inner and name in self.model.aliases and not self._is_shadowed(name):
            for each in self._alternatives(node, self.model.aliases[name]):
                self._check_dotted(node, each, node.ctx)

    def _logger_or_main_test(self, node: ast.Name) -> bool:
        """``logging.getLogger(__name__)`` and ``__name__ == "__main__"``: the two uses of a module's own name that
        cannot branch on where it was imported from."""
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Call) and parent.args == [node] and not parent.keywords:
            return self._resolve(parent.func) == "logging.getLogger"
        if isinstance(parent, ast.Compare) and len(parent.ops) == 1 and isinstance(parent.ops[0], ast.Eq | ast.NotEq):
            other = parent.comparators[0] if parent.left is node else parent.left
            return isinstance(other, ast.Constant) and other.value == "__main__"
        return False

    def _name_read(self, node: ast.Attribute) -> bool:
        """``obj.__class__.__name__`` / ``fn.__module__``: a string, not the object (``type(obj).__name__`` is
        allowed too)."""
        if not isinstance(node.ctx, ast.Load):
            return False
        if node.attr == "__module__":
            return True
        parent = self.parents.get(id(node))
        return node.attr == "__class__" and isinstance(parent, ast.Attribute) and parent.attr in _NAME_DUNDERS

    def _super_in_place(self, node: ast.Name) -> bool:
        """``super().attr`` / ``super(Cls, self).attr``: the super object used where it is made."""
        call = self.parents.get(id(node))
        up = self.parents.get(id(call))
        return isinstance(call, ast.Call) and call.func is node and isinstance(up, ast.Attribute) and up.value is call

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        """``case C(attr=p)`` reads ``subject.attr`` with no attribute node in the tree: a private attribute, a dunder
        or a namespace handle read so is refused as the attribute itself would be."""
        for attr in node.kwd_attrs:
            if attr.startswith("_") or attr in NAMESPACE_HANDLES:
                self.report("introspection", node, f"a class pattern reads attribute `{attr}` of the matched object "
                            "(private, special, or a frame or namespace); remove it and read only public attributes")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if _is_dunder(node.attr) and node.attr not in ALLOWED_DUNDERS and not self._name_read(node) and \
                not formats_own_fields(node, self.parents, self.model, self.cls, self.tree):  # fmt: skip
            self.report("introspection", node, f"accesses `{node.attr}`, which introspects objects or "
                        "modules; remove it (candidates must not look at the harness or rewire objects)")
        elif node.attr in NAMESPACE_HANDLES:
            self.report("introspection", node, f"accesses `{node.attr}`, which hands out a frame or a module's "
                        "namespace (any name in it, by string); remove it and name what you use")
        elif node.attr == "mro":
            self.report("introspection", node, "`.mro()` walks a class's bases (to reach a method the checker does "
                        "not see called); name the class whose method you call")
        if id(node) not in self._inner:
            dotted = self._resolve(node)
            if dotted is not None:
                for each in self._alternatives(node, dotted):
                    self._check_dotted(node, each, node.ctx)
            elif isinstance(node.ctx, ast.Load):
                self._check_method_value(node, node.value, node.attr)
                self._check_inherited(node, node.value, node.attr)
        self.generic_visit(node)

    # -- calls and operators ---------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        self._called.add(id(node.func))
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr" and not self._bound("getattr"):
            self._check_getattr(node)
        if isinstance(func, ast.Name) and func.id == "type" and not self._bound("type") and \
                (len(node.args) != 1 or node.keywords):  # fmt: skip
            self.report("dangerous-builtin", node, "`type(name, bases, namespace)` builds a class at run time "
                        "(it could derive from torch.Tensor); define classes with `class` statements")
        if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "type":
            if not self._bound("type"):
                self.report("introspection", node, "`type(obj)(...)` builds a new object of another object's "
                            "type (a new stream, a fake tensor); remove it and construct what you need directly")
        if isinstance(func, ast.Name) and func.id in self._device_functions and not self.in_jit and \
                self.depth > 0 and not any(func.id in scope for scope in self.scopes[1:]):  # fmt: skip
            self.report("torch-compute", node, f"calls @triton.jit function `{func.id}` directly instead of launching "
                        f"it; in the CPU interpreter that runs the kernel's body on the host, outside any launch; use "
                        f"`{func.id}[grid](...)`")
        called = self._resolve(func)
        if isinstance(func, ast.Attribute) and func.attr in FILE_IO_METHODS and not self.in_jit:
            if called is None:  # module functions are judged by their dotted name
                self.report("banned-import", node, f"`.{func.attr}()` does file I/O; remove it (candidates "
                            "read and write only tensors)")
        if called in LOOKUP_ATTRS:
            self._check_named_getter(node)
        if called in LITERAL_CALLS:
            self._check_literal_probe(node, called)
        if called in KERNEL_BUILDERS and (any(isinstance(a, ast.Starred) for a in node.args) or
                                           any(k.arg is None for k in node.keywords)):  # fmt: skip
            self.report("cuda-source", node, f"`{called}(*args/**kwargs)` hides the sources it compiles; use "
                        "explicit arguments instead")
        if self._compute_rules():
            self._check_call_compute(node)
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.MatMult) and self._compute_rules() and "matmul" not in self.allow:
            self.report("torch-compute", node, f"forward path uses the `@` operator (torch.matmul); {COMPUTE_HINT}")
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.op, ast.MatMult) and self._compute_rules() and "matmul" not in self.allow:
            self.report("torch-compute", node, f"forward path uses `@=` (torch.matmul); {COMPUTE_HINT}")
        self.generic_visit(node)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        # for layer in self.layers: layer(x)  -- each layer of an nn.ModuleList / Sequential is a torch module
        owner = self.model.instances.get(binding_key(node.iter) or "", "")
        if owner.startswith("torch.") and isinstance(node.target, ast.Name):
            self._torch_locals[node.target.id] = owner
        self._track_loop_target(node.target, node.iter)
        self.visit(node.target)
        self.visit(node.iter)
        self.loops += 1
        for stmt in [*node.body, *node.orelse]:
            self.visit(stmt)
        self.loops -= 1

    visit_AsyncFor = visit_For

    def visit_While(self, node: ast.While) -> None:
        self.visit(node.test)
        self.loops += 1
        for stmt in [*node.body, *node.orelse]:
            self.visit(stmt)
        self.loops -= 1

    # -- control flow ----------------------------------------------------------------------------
    def _never(self, test: ast.AST) -> tuple[bool, bool]:
        """(the branch taken when ``test`` is true never runs, the other one never runs) in the verifier."""
        branches = self._branches(self._none)
        return branches.never_true(test), branches.always_true(test)

    def _by_none(self, test: ast.AST) -> tuple[bool, bool]:
        """For each branch of ``test``: it never runs, and only because a parameter is always None."""
        if not self._none:
            return False, False
        full, without = self._branches(self._none), self._branches(Known())
        return (full.never_true(test) and not without.never_true(test),
                full.always_true(test) and not without.always_true(test))

    def _branches(self, known: Known) -> Branches:
        hasattr_builtin = "hasattr" not in self._file_bindings
        return Branches(self._resolve, known, lambda t: absent_attribute(t, self._owner_module, hasattr_builtin))

    def _owner_module(self, node: ast.AST) -> str | None:
        """The module a ``hasattr`` owner stands for, where its name is only ever an import of that module."""
        return self._resolve(node) if owner_root(node) in self._single_imports else None

    def _main_guard(self, node: ast.If) -> bool:
        return main_guard(node, self.tree, self.parents)

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        never_body, never_else = self._never(node.test)
        main = self._main_guard(node)  # only its body never runs: an `else:` runs wherever the file is imported
        never_body = never_body or main
        by_none = self._by_none(node.test)
        absent = needs_absent(node.test, self._owner_module, "hasattr" not in self._file_bindings)
        for block, dead, none in ((node.body, never_body, by_none[0]), (node.orelse, never_else, by_none[1])):
            if dead:
                self.absent_branches += absent and block is node.body
                self.main_blocks += main and block is node.body
                self._visit_never_running(list(block), none_branch=none)
                self.main_blocks -= main and block is node.body
                self.absent_branches -= absent and block is node.body
            else:
                for stmt in block:
                    self.visit(stmt)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self.visit(node.test)
        never_body, never_else = self._never(node.test)
        by_none = self._by_none(node.test)
        for branch, dead, none in ((node.body, never_body, by_none[0]), (node.orelse, never_else, by_none[1])):
            if dead:
                self._visit_never_running([branch], none_branch=none)
            else:
                self.visit(branch)

    def visit_Try(self, node: ast.Try) -> None:
        if self._compute_rules() and not is_import_only_try(node) and not self._probes.try_(node):
            self.report("try-fallback", node, "try statement on the forward path: a failing kernel must fail "
                        "loudly, not fall back to another implementation; remove the try/except (a version or "
                        "device probe may only import or query, and its except may only set flags)")
        self.generic_visit(node)

    visit_TryStar = visit_Try

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            expr = item.context_expr
            suppress = isinstance(expr, ast.Call) and self._resolve(expr.func) == "contextlib.suppress"
            if suppress and self._compute_rules():
                if not all(isinstance(s, ast.Import | ast.ImportFrom) for s in node.body):
                    self.report("try-fallback", node, "contextlib.suppress on the forward path swallows a failing "
                                "kernel like a try/except; remove it (a kernel must fail loudly)")
        self.generic_visit(node)

    visit_AsyncWith = visit_With


