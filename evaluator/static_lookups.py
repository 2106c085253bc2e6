"""How names are used (a mixin of the rule visitor): lookups by name, modules and methods as values.

``getattr(obj, "shape")`` is attribute access, but ``g = getattr``, ``partial(getattr, x)`` or a
computed name is a lookup the checker cannot follow; ``typing.Optional`` is API use, but
``self.m = typing`` lets ``self.m.sys`` escape every chain check; ``x.softmax(-1)`` is a call the compute
rules judge, but ``f = x.softmax`` hands a torch op to code they never see. These rules decide from the
position a node stands in (``evaluator.static_uses``), so each one lists the uses it allows. A few uses
are allowed because real kernels need them and they reach nothing: ``getattr(torch, device.type)`` for
device queries, ``importlib.util.find_spec("pkg") is not None``, ``isinstance(x, DTensor)``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from evaluator.static_chains import is_module, policy_for
from evaluator.static_environ import precision_pin
from evaluator.static_model import CUDA_COMPILE, LOAD_INLINE, ModuleModel, binding_key, const_getattr, scope_bindings
from evaluator.static_rules import DEVICE_QUERIES, method_computes, tensor_properties, type_only_policy
from evaluator.static_structure import inherited_layer_method
from evaluator.static_uses import Use, assigned_once, enclosing_scope, name_loads

# Module uses that stay visible to the checker: an attribute chain, getattr/hasattr with a literal name,
# an ``is None`` test (optional imports), an annotation, or an alias the model follows (``tl = triton.language``).
MODULE_USES = frozenset({Use.ATTRIBUTE_BASE, Use.LOOKUP_OBJECT, Use.TRUTH, Use.ANNOTATION})
KERNEL_BUILDERS = frozenset({CUDA_COMPILE, LOAD_INLINE})
LOOKUP_ATTRS = frozenset({"operator.methodcaller", "operator.attrgetter"})
LITERAL_CALLS = frozenset({"importlib.util.find_spec", "importlib.metadata.version"})
DTYPE_LIMITS = frozenset({"torch.finfo", "torch.iinfo"})  # objects of numbers: .max/.min are values, not methods
DTYPE_LIMIT_FIELDS = frozenset({"max", "min", "eps", "tiny", "bits", "resolution", "smallest_normal", "dtype"})
COMPUTE_HINT = (
    "do this math inside your kernel; PyTorch may only allocate (torch.empty/empty_like), view, "
    "reshape and cast on the forward path"
)


class LookupRules:
    """Mixed into ``RuleVisitor``: uses its model, parents, scopes, ``report`` and ``_check_dotted``."""

    # Provided by the host visitor (``evaluator.static_visitor.RuleVisitor``).
    model: ModuleModel
    tree: ast.Module
    parents: dict[int, ast.AST]
    allow: frozenset[str]
    in_jit: bool
    cls: str | None  # enclosing module-level class
    _inner: set[int]  # ids of nodes inside an attribute chain already checked
    _own_ops: set[str]  # functions registered as the candidate's own torch.library ops
    dead_bodies: int  # > 0 inside the body of a function nothing running refers to (evaluator.static_liveness)
    report: Callable[[str, ast.AST, str], None]
    _use: Callable[[ast.AST], Use]
    _resolve: Callable[[ast.AST], str | None]
    _check_dotted: Callable[[ast.AST, str, ast.expr_context], None]
    _compute_rules: Callable[[], bool]

    def _check_value_use(self, node: ast.AST, dotted: str, use: Use) -> bool:
        """Rules on *how* a resolved name is used; True when one fired."""
        if self._check_read_through(node, dotted, use):
            return True
        typed = type_only_policy(dotted)
        if typed is not None:
            module, policy = typed
            member = dotted[len(module) + 1 :]
            ok = use in MODULE_USES if not member else (
                "." not in member and member in (policy.members or ()) and self._type_use(node, use))
            if not ok:
                self.report("banned-import", node, f"`{dotted}`: {policy.why_limited}; use it only as "
                            "`isinstance(x, T)` or in annotations, or remove it")
            return not ok
        if dotted in LOOKUP_ATTRS and use is not Use.CALLED and not self._alias_of(node, dotted, use):
            self.report("dangerous-builtin", node, f"`{dotted}` used as a value looks attributes up by names the "
                        "checker cannot see; call it directly with a literal name, or use plain attribute access")
            return True
        if dotted in KERNEL_BUILDERS and use is not Use.CALLED and not self._alias_of(node, dotted, use):
            self.report("cuda-source", node, f"`{dotted}` used as a value hides the sources it compiles from the "
                        "checker; call it directly with string constants instead")
            return True
        if use not in MODULE_USES and not self._alias_of(node, dotted, use) and is_module(dotted):
            self.report("banned-import", node, f"module `{dotted}` is handed around as a value, so the checker "
                        f"cannot see what is reached through it; use it only as `{dotted}.name` (or import the "
                        "name you need)")
            return True
        return False

    def _check_read_through(self, node: ast.AST, dotted: str, use: Use) -> bool:
        """A member its policy lets through only some methods (``os.environ`` -> ``.get``): any other use -- a
        subscript, an assignment, an alias, an argument -- could change or hand on the object; True when refused."""
        found = policy_for(dotted)
        if found is None or not found[1].read_through:
            return False
        module, policy = found
        rest = dotted[len(module) + 1 :].split(".") if dotted != module else []
        if not rest or rest[0] not in policy.read_through:
            return False
        allowed = policy.read_through[rest[0]]
        if len(rest) == 1 and use is Use.TRUTH:
            return False  # "FLAG" in os.environ
        if len(rest) == 2 and rest[1] in allowed and use is Use.CALLED:
            return False
        if precision_pin(node, self._resolve, self.parents):
            return False  # os.environ["TRITON_F32_DEFAULT"] = "ieee" at module level (evaluator.static_environ)
        methods = ", ".join(f"`{module}.{rest[0]}.{m}(...)`" for m in sorted(allowed))
        self.report("banned-import", node, f"`{dotted}` used this way could change or hand on "
                    f"`{module}.{rest[0]}`; use only {methods} or an `in` test ({policy.why_limited})")
        return True

    def _alias_of(self, node: ast.AST, dotted: str, use: Use) -> bool:
        """True when ``node`` is the value of ``name = node`` and the model reads ``name`` as ``dotted``."""
        if use is not Use.ALIAS:
            return False
        parent = self.parents.get(id(node))
        targets = parent.targets if isinstance(parent, ast.Assign) else [getattr(parent, "target", None)]
        return all(isinstance(t, ast.Name) and self.model.aliases.get(t.id) == dotted for t in targets)

    def _type_use(self, node: ast.AST, use: Use) -> bool:
        """A type-only name used as a type: isinstance/issubclass/except/annotation, or a tuple of types
        bound to a name that is itself only used that way (``_DTENSOR = (DTensor,)``)."""
        if use in (Use.TYPE_CHECK, Use.ANNOTATION, Use.TRUTH):
            return True  # TRUTH: `DTensor is not None` after an optional import
        holder = node
        if isinstance(self.parents.get(id(node)), ast.Tuple):
            holder = self.parents[id(node)]
        parent = self.parents.get(id(holder))
        if self._use(holder) is not Use.ALIAS or not isinstance(parent, ast.Assign | ast.AnnAssign):
            return False
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        scope = enclosing_scope(parent, self.parents)
        loads = [n for t in targets if isinstance(t, ast.Name) for n in name_loads(scope, t.id)]
        return bool(loads) and all(self._use(n) in (Use.TYPE_CHECK, Use.ANNOTATION, Use.TRUTH) for n in loads)

    def _check_inherited(self, node: ast.AST, owner: ast.AST, name: str) -> None:
        """``super().forward`` / ``self.reset_parameters`` on the forward path of a class deriving from one of
        PyTorch's layers, where the layer's own function runs, or such a function kept as a value anywhere
        (``forward = Base.forward`` in a class body): PyTorch's computation."""
        layer_method = inherited_layer_method(self.model, self.cls, owner, name)
        if layer_method is None:
            return
        if self._use(node) is not Use.CALLED:  # kept to run later (forward = Base.forward), wherever it is kept
            self.report("torch-compute", node, f"keeps a reference to `{layer_method}` (PyTorch's layer, which the "
                        f"class derives from); {COMPUTE_HINT}")
        elif self._compute_rules():
            self.report("torch-compute", node, f"forward path reaches `{layer_method}` (PyTorch's layer, which the "
                        f"class derives from); {COMPUTE_HINT}")

    def _check_method_value(self, node: ast.AST, owner_node: ast.AST, method: str) -> None:
        """``f = x.softmax`` / ``getattr(x, "exp")`` handed on uncalled: a torch op the compute rules miss."""
        if self.in_jit or method in tensor_properties() or not method_computes(method, self.allow):
            return
        if self._use(node) in (Use.CALLED, Use.ATTRIBUTE_BASE) or binding_key(owner_node) == "self":
            return  # self is the module (or helper object), never a tensor: self.norm is a submodule
        if self._exempt_owner(owner_node, method):
            return
        self.report("torch-compute", node, f"takes tensor method `.{method}` as a value (a bound-method lookup "
                    f"that runs later, where the checker cannot see it); {COMPUTE_HINT}")

    def _exempt_owner(self, owner_node: ast.AST, method: str) -> bool:
        """Owners whose methods are not torch ops: Python containers, own methods, kernels, extensions, a dtype's
        limits (``torch.finfo(dtype).min``)."""
        if method in DTYPE_LIMIT_FIELDS and self._dtype_limits(owner_node):
            return True
        owner = binding_key(owner_node) or ""
        if owner in self.model.extensions or owner in self.model.launchables:
            return True
        if self.model.instances.get(owner, "").startswith("builtin:"):
            return True
        if isinstance(owner_node, ast.Call) and isinstance(owner_node.func, ast.Name):
            if owner_node.func.id in self.model.factories:
                return True
        if isinstance(owner_node, ast.Name) and owner_node.id in self._own_ops:
            return True
        return owner == "self" and self.cls is not None and f"{self.cls}.{method}" in self.model.functions

    def _dtype_limits(self, owner: ast.AST) -> bool:
        """``torch.finfo(...)`` / ``torch.iinfo(...)``, or a name bound once in its scope to one: its ``max``,
        ``min``, ``eps`` are numbers (the mask fill value ``torch.finfo(x.dtype).min``), not tensor methods."""
        if isinstance(owner, ast.Name):
            scope = enclosing_scope(owner, self.model.parents)
            if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.Module):
                return False
            sites = [node for name, node in scope_bindings(scope) if name == owner.id]
            if len(sites) != 1 or any(isinstance(n, ast.Global | ast.Nonlocal) and owner.id in n.names
                                      for n in ast.walk(self.tree)):
                return False  # bound elsewhere too (a match capture, a loop), or rebound from a nested scope
            bound = self.model.parents.get(id(sites[0]))
            if not (isinstance(bound, ast.Assign) and bound.targets == [sites[0]]):
                return False
            owner = bound.value
        return isinstance(owner, ast.Call) and self._resolve(owner.func) in DTYPE_LIMITS

    def _check_getattr(self, node: ast.Call) -> None:
        """``getattr(obj, "public_name"[, default])`` is attribute access; anything else hides a lookup,
        except ``getattr(torch, device.type[, None])`` used only to ask that device module about the device."""
        lookup = const_getattr(node)
        if lookup is not None and not lookup[1].startswith("_"):
            if id(node) not in self._inner:
                dotted = self._resolve(node)
                if dotted is not None:
                    self._check_dotted(node, dotted, ast.Load())
                else:
                    owner, name = lookup
                    self._check_method_value(node, owner, name)
                    self._check_inherited(node, owner, name)
            return
        if self._device_module_lookup(node):
            self._inner.add(id(node.args[0]))
            return
        if self.dead_bodies and self._plain_lookup_call(node):
            return  # in code that never runs (evaluator.static_liveness): the lookup is never made
        self.report("dangerous-builtin", node, "getattr with a computed or private attribute name hides what "
                    "the code touches; use plain attribute access (getattr(torch, device.type) may only be "
                    "used for device queries such as .is_available())")

    @staticmethod
    def _plain_lookup_call(node: ast.Call) -> bool:
        """``getattr(obj, name[, default])`` called where it stands, with no ``*``/``**`` (never ``getattr`` handed on
        as a value: that is judged where the value goes). In a function no running code refers to, such a call is
        never made; liveness itself rests on running code having no computed lookups, which stay refused there."""
        return (isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr") and not node.keywords
                and len(node.args) in (2, 3) and not any(isinstance(a, ast.Starred) for a in node.args))

    def _device_lookup_shape(self, node: ast.AST) -> bool:
        """``getattr(torch, <device name>[, default])``: the name a device's ``.type``, a variable, ``str(...)`` or
        a call of one of the module's functions (what its result may be used for is checked separately)."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"):
            return False
        if node.keywords or len(node.args) not in (2, 3) or self._resolve(node.args[0]) != "torch":
            return False
        name = node.args[1]
        return (
            (isinstance(name, ast.Attribute) and name.attr == "type")
            or isinstance(name, ast.Name)
            or (isinstance(name, ast.Call) and isinstance(name.func, ast.Name) and not name.keywords
                and (name.func.id == "str" or name.func.id in self.model.functions))
        )  # fmt: skip

    def _bound_only_by_lookups(self, scope: ast.AST, name: str) -> bool:
        """Every binding of ``name`` in ``scope`` is ``name = getattr(torch, <device name>)`` (fla picks the device
        module once, then again after a version check): each value is a device module, whichever binding holds."""
        for n in ast.walk(scope):
            if isinstance(n, ast.arg) and n.arg == name:
                return False
            # bindings that are no Name store: `class LIB:`/`def LIB`, `import x as LIB`, `except E as LIB`, `case LIB`
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name == name:
                return False
            if isinstance(n, ast.alias) and (n.asname or n.name).split(".")[0] == name:
                return False
            if isinstance(n, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and n.name == name:
                return False
            if isinstance(n, ast.MatchMapping) and n.rest == name:
                return False
            if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load):
                parent = self.parents.get(id(n))
                if not (isinstance(parent, ast.Assign) and parent.targets == [n]
                        and self._device_lookup_shape(parent.value)):  # fmt: skip
                    return False
        return True

    def _amp_decorator_of(self, load: ast.AST) -> bool:
        """``lib.amp.custom_fwd`` / ``lib.amp.custom_bwd`` of a device module: the amp decorators every backend
        spells so (``torch.cuda.amp.custom_fwd``), allowed wherever the literal spelling is."""
        amp = self.parents.get(id(load))
        leaf = self.parents.get(id(amp))
        return (isinstance(amp, ast.Attribute) and amp.attr == "amp" and isinstance(leaf, ast.Attribute)
                and isinstance(leaf.ctx, ast.Load) and leaf.attr in ("custom_fwd", "custom_bwd"))  # fmt: skip

    def _device_module_lookup(self, node: ast.Call) -> bool:
        """``getattr(torch, device.type, None)`` whose result is only asked device questions."""
        if not self._device_lookup_shape(node):
            return False
        use = self._use(node)
        parent = self.parents.get(id(node))
        if use is Use.ATTRIBUTE_BASE:
            return isinstance(parent, ast.Attribute) and parent.attr in DEVICE_QUERIES
        if use is Use.TRUTH:
            return True
        if use is not Use.ALIAS or not isinstance(parent, ast.Assign) or len(parent.targets) != 1:
            return False
        target = parent.targets[0]
        if isinstance(self.parents.get(id(parent)), ast.ClassDef):
            return False  # a class attribute is read as `C.lib`/`self.lib`, which no name lookup follows
        scope = enclosing_scope(parent, self.parents)
        if not isinstance(target, ast.Name) or not (assigned_once(scope, target.id)
                                                    or self._bound_only_by_lookups(scope, target.id)):
            return False
        for load in name_loads(scope, target.id):
            load_use, load_parent = self._use(load), self.parents.get(id(load))
            if load_use is Use.ATTRIBUTE_BASE and isinstance(load_parent, ast.Attribute) and \
                    load_parent.attr in DEVICE_QUERIES:  # fmt: skip
                continue
            if load_use is Use.ATTRIBUTE_BASE and self._amp_decorator_of(load):
                continue
            if load_use is Use.LOOKUP_OBJECT and isinstance(load_parent, ast.Call) and \
                    isinstance(load_parent.func, ast.Name) and load_parent.func.id == "hasattr":  # fmt: skip
                continue
            if load_use is not Use.TRUTH:
                return False
        return True

    def _check_literal_probe(self, node: ast.Call, called: str) -> None:
        """importlib probes take literal names; a find_spec result is only tested, never loaded from."""
        literal = all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args) and \
            not node.keywords and bool(node.args)  # fmt: skip
        if not literal:
            self.report("banned-import", node, f"`{called}` with a computed name probes modules the checker "
                        "cannot see; use a string literal for the package name")
        if called.endswith("find_spec") and not self._only_tested(node):
            self.report("banned-import", node, "the result of find_spec can load and run a module (spec.loader); "
                        "use it only as a test: `importlib.util.find_spec(\"name\") is not None`")

    def _only_tested(self, node: ast.AST) -> bool:
        use = self._use(node)
        if use is Use.TRUTH:
            return True
        parent = self.parents.get(id(node))
        if use is not Use.ALIAS or not isinstance(parent, ast.Assign):
            return False
        scope = enclosing_scope(parent, self.parents)
        loads = [n for t in parent.targets if isinstance(t, ast.Name) for n in name_loads(scope, t.id)]
        return all(self._use(n) is Use.TRUTH for n in loads)

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
                                f"{COMPUTE_HINT}")
