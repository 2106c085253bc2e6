"""Step 1 of the verifier: static checks of a candidate's source, before anything of it runs.

``check_source`` parses the candidate (never imports it) and reports, as values a person can act on,
everything that disqualifies it on sight: no entry point, no kernel or none launched from the forward
path (or only on an empty grid), imports and module chains outside the allowlist
(``evaluator.import_policy``), name lookups the checker cannot follow, introspection, private APIs,
patching, side streams and device-state changes (also inside CUDA source, as the program assembles it),
PyTorch compute or host-side copies of tensor data on the forward path, the reference ``Model``, and
``try`` fallbacks. It judges *mechanisms*, by the position a name is used in: a direct call with literal
names is visible, the same callable stored, passed, aliased or fed a computed name is not. Rule ids:

=====================  ==========================================================================
``syntax-error``       the file does not parse (``StaticReport.syntax_error``)
``missing-entry``      no ``class ModelNew`` with ``forward`` (or no function named ``entry``), or
                       the entry point / its forward is bound more than once (replaced later)
``no-kernel``          no @triton.jit kernel, ``kernelevo.cuda.compile`` kernel or load_inline module
``kernel-not-launched`` kernels exist but no launch site is reachable from the forward path (calls of
                       the candidate's own ``torch.library.custom_op``/``triton_op`` ops,
                       ``wrap_triton(kernel)[grid]``, a call of a local bound once to
                       ``functools.partial(kernel[grid], ...)`` and a kernel kept from a module-level
                       factory, ``self.k = compiled()``, count as launch sites)
``empty-grid``         a launch whose grid (or CUDA block) is empty by construction: ``(0,)``, ``()``,
                       ``n * 0``, ``cdiv(0, B)``, a grid lambda/function/constant that is always empty
``banned-import``      import of a module outside the allowlist, or a member a module's policy refuses
                       (``importlib.import_module``, ``contextlib.chdir``, ``typing.get_type_hints``,
                       ``torch.distributed`` beyond isinstance/annotations of its tensor types and its
                       ``is_*_available()`` probes; ``os``/``sys``/``platform``/``warnings``/``logging``/
                       ``einops`` beyond their read-only members: ``os.environ.get``/``os.getenv``/``"X" in
                       os.environ``, ``sys.version_info``/``platform``..., ``platform.machine``,
                       ``warnings.warn``, ``logging.getLogger`` whose logger is only used to log
                       (``evaluator.static_loggers``: no handlers, filters or the logger tree),
                       ``einops.rearrange``/``repeat``), with
                       a reason true of that module; any attribute chain that leaves its module's
                       package (``typing.sys``, ``torch.os``, ``triton.language.core.builtins``,
                       ``kernelevo.cuda.os``) or is not in a stdlib helper's ``__all__``; a module
                       handed around as a value (``self.m = typing``, a default argument, a list);
                       ``find_spec`` with a computed name or whose result is used beyond a test;
                       file I/O through torch (save/load/from_file) or ``.tofile()``. Not refused
                       (``evaluator.static_optional``): an optional import (in a ``try`` whose handler
                       catches ImportError or Exception and only binds fallbacks) whose names are never
                       read and are no class attributes, or of a module that is not installed (it always
                       fails); ``importlib.import_module(name)`` read only for ``__version__``, with
                       ``name`` a literal or a parameter every caller passes a literal for, each allowed
                       or not installed; ``importlib.import_module(f"pkg.{x}")`` whose spelled-out package
                       is refused everywhere and not loaded (it can only raise; never the verifier's own
                       package, ``__main__`` or a private root), and ``sys.modules.get("pkg.mod")`` of such a
                       package (always its constant default). ``inspect`` stays refused
``dangerous-builtin``  eval/exec/open/setattr/id/memoryview/...; getattr (and operator.methodcaller /
                       attrgetter) with a computed or private name, or used as a value (``g =
                       getattr``, ``partial(getattr, x)``, ``reduce(getattr, ...)``, in a container);
                       ``type(name, bases, ns)`` or ``type`` as a value; annotations that are code
                       (calls, lambdas, string annotations holding either); ``getattr(torch,
                       device.type)`` is allowed only for device-module queries (and its amp
                       ``custom_fwd``/``custom_bwd``; the name may be bound more than once, each time so)
``introspection``      dunder access (``__class__``, ``__dict__``, ``__builtins__``...; reading a name --
                       ``obj.__class__.__name__``, ``fn.__module__`` -- is allowed, the module's own
                       ``__name__`` only in ``logging.getLogger(__name__)`` and ``__main__`` tests), dunder method
                       definitions (``__eq__``, ``__torch_function__``) and special names bound any other
                       way (``__eq__ = f`` in a class, ``__getattr__ = f`` in the module, ``__signature__``;
                       only ``__all__``/``__slots__``/``__version__``/``__doc__``), ``type(x)(...)``, allocator
                       snapshots
``private-api``        ``torch._C``, ``torch.ops`` (except the candidate's own registered ops),
                       ``torch.library`` beyond custom_op/triton_op/wrap_triton/register_fake/
                       register_autograd (and registrations into PyTorch's namespaces or under a
                       computed name), ``triton.runtime``/``compiler``/``compile`` (except the active
                       driver's ``utils.get_device_properties``/``get_current_target``/
                       ``get_current_device`` probes), ``._x`` names (``triton.language._experimental_X``
                       is judged as ``triton.language.X`` when that is a public function), nn.Module internals
                       (``self._forward_hooks``, ``self._modules``)
``patching``           assignment or ``del`` of an attribute of an imported module, of a module-level
                       class or function, or of ``self.forward``; rebinding a name an import binds
                       (locals and parameters are locals; an import ``try`` may bind a constant or an
                       empty class in its ``except``; a top-level def/class named like an import made
                       only inside functions, ``F = TypeVar("F")``, and a ``@triton.jit`` function named
                       like the ``triton.language`` member it stands in for cannot mislead the checker);
                       module/state-dict hooks; overriding nn.Module methods; decorating the entry class
``stream-or-state``    streams, CUDA graphs, seeds, default dtype, memory fraction, determinism... of
                       every device backend (torch.cuda, xpu, mps, mtia, cpu, accelerator, npu)
``cuda-source``        CUDA/C++ source (and compiler flags) that creates or names other streams,
                       selects per-thread default streams, allocates, touches persisting L2, calls
                       torch ops or cuBLAS/cuDNN, hides names (``using namespace at``, ``##``),
                       includes files by path, links libraries, or is built at run time (or by
                       ``**kwargs``, or through load_inline/compile used as a value) so it cannot be
                       checked (a one-``return`` helper whose parameters only print as ``{n:d}`` tokens,
                       ``#define THREADS {n:d}``, is scanned with the digits as ``0``); a Triton kernel's
                       source line other than its own ``def`` that begins with ``def `` (the CPU interpreter
                       compiles the kernel from its last such line: evaluator.static_kernel_source); a launch without
                       a stream argument (the default stream) is allowed
``torch-compute``      PyTorch compute on the forward path (torch.*, F.*, tensor methods, ``@``,
                       torch.nn modules called), host copies of tensor data (``.tolist()``,
                       ``.numpy()``, ``.apply_()``, ``new_tensor``, storages, ``.item()``/``float()``
                       of elements in a loop), a stored reference to a torch op or a tensor method
                       taken as a value anywhere (``f = x.softmax``; not in a module-level table no
                       running code reads, ``evaluator.static_unread``), torch.compile / torch.jit /
                       autocast, a ``@triton.jit`` function called directly instead of launched;
                       device-capability probes of any backend (npu included), ``torch.distributed``
                       backend probes, compile/trace/autocast state queries (``torch.compiler.
                       is_compiling``, ``torch.jit.is_scripting``, ``torch.is_autocast_enabled``...) and
                       the amp decorators ``torch.amp.custom_fwd/custom_bwd``
                       (``torch.cuda.amp``...) are not compute. Bookkeeping is left to the run time's
                       size limit (``evaluator.static_bookkeeping``): a full reduction (sum, mean,
                       max, min, amax, amin, any, all, count_nonzero) or an element-wise comparison of
                       a mask (a local bound only to a comparison) or of a kernel-written buffer (a
                       local bound only to an allocation and passed to the candidate's launch), run at
                       most once per forward call (no loop, recursion or repeated caller), at most 8 per
                       file; or any of those inside an ``assert`` whose value only decides it
``call-state``         in code forward can run (closures included), state kept across calls updated
                       from its own earlier value: a count of calls (``self.calls += 1``, ``n = self.n;
                       self.n = n + 1``), a container grown or used up, an iterator advanced, a container
                       keyed by objects new at every call, ``cache_info()`` (``evaluator.static_state``;
                       caches written from the call's arguments are fine)
``reference``          uses ``Model`` or makes ``ModelNew`` inherit anything but nn.Module
``tensor-subclass``    a class derived from torch.Tensor or nn.Parameter (lazy or fake outputs)
``try-fallback``       a ``try`` (or ``contextlib.suppress``) on the forward path, except ``try:
                       import ... except ImportError`` and version/device probes whose body only
                       imports or queries (helpers whose bodies only query count as queries; nothing
                       after an import that always fails runs) and whose handlers only set flags,
                       constants or locals that are probes themselves (``except Exception: return
                       device``, ``except KeyError: return cls.DEFAULT.value`` of an Enum of constants),
                       log through a logger or ask again with another such ``try``
``too-complex``        the file nests too deeply to analyse (rejected rather than skipped)
``internal-error``     the checker itself failed on this file (rejected; a checker bug to report)
=====================  ==========================================================================

Code that never runs in the verifier (``evaluator.static_liveness``) is exempt from ``banned-import``,
``torch-compute`` and ``try-fallback`` (every other rule still applies there; the bodies of dead functions also
from ``private-api`` and ``getattr`` calls with a computed or private name, branches under an absent ``hasattr``
also from ``private-api`` and module-attribute ``patching``): functions no running code
refers to (an ``autograd.Function.backward`` whose class is only used as ``Cls.apply``; methods of a class named
only in annotations and base lists), the body of ``if isinstance(x, DTensor)`` and of ``if TYPE_CHECKING:`` (names
only it imports may stand in annotations under ``from __future__ import annotations``), branches on a parameter
every caller passes as None (``if weight is not None``), branches that need ``hasattr(<torch/triton module>, "name")``
of a name the installed module lacks (``evaluator.static_absent``), a function under ``@torch.compile`` (a lazy
wrapper) that nothing running refers to, with its decorators when their arguments are constants (they run at
definition), and a module-level ``if __name__ == "__main__":`` block in a file that never binds ``__name__``. A
module-level import whose names only such code reads is not refused (``evaluator.static_dormant``), nor is the
module-level pin ``os.environ["TRITON_F32_DEFAULT"] = "ieee"`` (``evaluator.static_environ``).

The forward path is the entry's ``forward`` (and ``__call__``) plus every function, method and
``autograd.Function.forward`` reachable from it (``torch.ops.ns.op`` reaches the function registered
as that op), plus hooks in Triton kernels' decorators, functions registered as an operator's kernel
(``@my_op.register_kernel("cpu")``: PyTorch runs them instead of the op's own function), any function stored as a value
(``self.fn = helper``), every lambda, nested functions that escape their scope, and methods of
classes defined inside functions, since those can run during forward.
Known limits (the runtime guards cover them): builtins such as ``sum(x)`` and operators on tensors,
calls through objects the checker cannot type (``for layer in self.layers: layer(x)``), grids whose
emptiness depends on the data, element-wise host work spelled without conversions
(``map(math.exp, row)``), and launch sites in dead code.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

from evaluator.static_cuda import expand_template, scan_source, source_pieces
from evaluator.static_fold import fold_strings
from evaluator.static_grids import empty_launch
from evaluator.static_identity import check_identity_reads
from evaluator.static_inspect import check_inspect
from evaluator.static_kernel_body import check_kernel_bodies
from evaluator.static_kernel_source import (
    check_block_handles,
    check_jit_values,
    check_kernel_lines,
    check_wrapping,
)
from evaluator.static_library import check_registrations
from evaluator.static_liveness import unread_bindings
from evaluator.static_loggers import check_loggers
from evaluator.static_mangling import mangle
from evaluator.static_model import (
    CUDA_COMPILE,
    LOAD_INLINE,
    TRITON_JIT,
    ModuleModel,
    bound_names,
    build_model,
    decorator_names,
    device_functions,
)
from evaluator.static_model import resolve as _resolve
from evaluator.static_paths import (
    hook_roots,
    implementation_roots,
    launch_sites,
    made_helper_roots,
    passed_kernels,
    reachable,
    stored_roots,
)
from evaluator.static_rules import normalise_allow
from evaluator.static_shadowing import check_shadowing
from evaluator.static_state import check_call_state
from evaluator.static_structure import (
    check_class_members,
    check_entry_definition,
    check_hooks,
    check_rebinding,
    entry_method,
    property_roots,
)
from evaluator.static_uses import module_bindings
from evaluator.static_visitor import RuleVisitor
from kernelevo import pyast


@dataclass(frozen=True)
class Violation:
    """One broken rule: where (1-based line, 0-based column) and what to do instead."""

    rule: str
    line: int
    col: int
    message: str


@dataclass
class StaticReport:
    """Everything the static step learned about a candidate; ``ok`` when it may go on to compile."""

    syntax_error: Violation | None
    violations: list[Violation] = field(default_factory=list)
    backend: str = "unknown"  # "triton" | "cuda" | "load_inline" | "unknown"
    kernels: list[str] = field(default_factory=list)
    launched: list[str] = field(default_factory=list)
    # "namespace::name" of every operator the candidate registers with torch.library.custom_op/triton_op:
    # calling one runs the candidate's own kernels (the runtime op recorder may treat them as such).
    custom_ops: list[str] = field(default_factory=list)
    # The candidate defines a backward (an autograd.Function's ``backward``, ``register_autograd``): it is also
    # called the way a training step calls it, on inputs that require grad (evaluator.callplan).
    differentiable: bool = False
    # Modules of optional imports in running code that the verifier's run time never provides (a fallback binds
    # their names instead): where a user's program has one, what its success selects runs unverified.
    optional_imports: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the file parsed and broke no rule."""
        return self.syntax_error is None and not self.violations


class _Collector:
    def __init__(self) -> None:
        self.violations: list[Violation] = []

    def add(self, rule: str, line: int, col: int, message: str) -> None:
        self.violations.append(Violation(rule, line, col, message))

    def report(self, rule: str, node: ast.AST, message: str) -> None:
        self.add(rule, getattr(node, "lineno", 1), getattr(node, "col_offset", 0), message)

    def sorted(self) -> list[Violation]:
        return sorted(set(self.violations), key=lambda v: (v.line, v.col, v.rule, v.message))


def _entry_roots(tree: ast.Module, model: ModuleModel, entry: str, out: _Collector) -> tuple[list[str], ast.AST | None]:
    """Forward-path roots of the entry point and its definition; reports ``missing-entry``."""
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef) and stmt.name == entry:
            roots = [key for m in ("forward", "__call__") if (key := entry_method(model, stmt, m)) is not None]
            if not any(r.endswith(".forward") for r in roots):
                out.report("missing-entry", stmt, f"class {entry} has no forward method; define "
                           f"`def forward(self, ...)` with the same signature as the task's Model.forward")
            return roots, stmt
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == entry:
            if entry in model.jit_kernels:
                break
            return [entry], stmt
    kind = "class ModelNew(nn.Module) with a forward method" if entry == "ModelNew" else f"a function `{entry}`"
    out.add("missing-entry", 1, 0, f"no entry point: define {kind} at module level")
    return [], None


_LOAD_INLINE_SOURCES = ((1, "cpp_sources"), (2, "cuda_sources"), (-1, "extra_cflags"), (-1, "extra_cuda_cflags"))
_LOAD_INLINE_REFUSED = ("extra_ldflags", "extra_include_paths")


def _source_expressions(tree: ast.Module, model: ModuleModel, out: _Collector) -> list[tuple[ast.AST, ast.AST]]:
    """(site, expression) for every CUDA/C++ source or compiler flag the candidate hands to a compiler."""
    sources: list[tuple[ast.AST, ast.AST]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called = _resolve(node.func, model.aliases)
            kws = {kw.arg: kw.value for kw in node.keywords}
            if called == CUDA_COMPILE:
                exprs = [kws[k] for k in ("source", "src", "code", "options") if k in kws]
                sources.extend((node, e) for e in [*exprs, *node.args[:1]])
            elif called == LOAD_INLINE:
                for i, name in _LOAD_INLINE_SOURCES:
                    expr = kws.get(name, node.args[i] if 0 <= i < len(node.args) else None)
                    if expr is not None:
                        sources.append((node, expr))
                for name in _LOAD_INLINE_REFUSED:
                    pieces = list(source_pieces(kws[name], model.constants)) if name in kws else []
                    if any(p is None or p.text.strip() for p in pieces):  # [""] (KernelBench's example) is fine
                        out.report("cuda-source", node, f"load_inline({name}=...) brings in outside libraries "
                                   "or headers; remove it and keep all code in cpp_sources/cuda_sources")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "__global__" in node.value:
            sources.append((node, node))
    return sources


def _check_cuda_sources(tree: ast.Module, model: ModuleModel, allow: frozenset[str], out: _Collector) -> None:
    """Run ``cuda-source`` checks on every CUDA/C++ source string the candidate compiles or defines.

    Each string constant is scanned where it stands (so findings point at its line), and the whole
    source is scanned again as the program builds it (``"cudaMal" + "loc"``, ``"{}{}".format(...)``,
    ``"...collaMaduc"[::-1]``): a finding only the assembled source shows is reported at the call.
    """
    scanned: set[int] = set()
    resolve_here = lambda n: _resolve(n, model.aliases)  # noqa: E731
    for site, expr in _source_expressions(tree, model, out):
        expr = expand_template(expr, model.functions)  # noqa: PLW2901 - the expression the compiler receives
        whole = None if isinstance(expr, ast.Constant) else fold_strings(expr, model.constants.get, resolve_here)
        messages: set[str] = set()
        for piece in source_pieces(expr, model.constants):
            if piece is None:
                if whole is None:
                    out.report("cuda-source", site, "CUDA/C++ source or compiler flags are built at run time, so "
                               "they cannot be checked; use string constants (literals or module-level names), or a "
                               "helper that only returns an f-string with integers as `{n:d}` tokens "
                               "(`#define THREADS {n:d}`)")
                continue
            findings = scan_source(piece.text, allow)
            messages.update(f.message for f in findings)
            if id(piece.node) in scanned:
                continue
            scanned.add(id(piece.node))
            for finding in findings:
                line = piece.node.lineno + finding.line
                col = piece.node.col_offset if finding.line == 0 else finding.col
                out.add("cuda-source", line, col, finding.message)
        if whole is None and not isinstance(expr, ast.Constant) and None not in source_pieces(expr, model.constants):
            out.report("cuda-source", site, "CUDA/C++ source or compiler flags are assembled in a way the checker "
                       "cannot evaluate; use string constants joined with `+`, f-strings or .format instead")
        for text in whole or ():
            for finding in scan_source(text, allow):
                if finding.message not in messages:
                    messages.add(finding.message)
                    out.report("cuda-source", site, f"(in the assembled source) {finding.message}")


def _check_kernel_names(tree: ast.Module, model: ModuleModel, kernels: list[ast.FunctionDef | ast.AsyncFunctionDef],
                        out: _Collector) -> None:
    """Triton's CPU interpreter runs a kernel with its own module's globals added to the file's where the file
    lacks them (numpy as ``np``, ``inspect``, ...): a kernel may use such a name only where its own scope, the
    functions around it or module-level code that always runs binds it (a parameter of another function, a loop
    target or a branch does not). Other unbound names just fail, as they would anywhere."""
    module = module_bindings(tree)
    injected = interpreter_names()
    for kernel in kernels:
        bound = set(module) | _local_names(kernel)
        scope = model.parents.get(id(kernel))
        while scope is not None:
            if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
                bound |= _local_names(scope)
            scope = model.parents.get(id(scope))
        free = sorted({n.id for n in ast.walk(kernel) if isinstance(n, ast.Name) and n.id in injected
                       and n.id not in bound})
        if free:
            out.add("cuda-source", kernel.lineno, kernel.col_offset, f"kernel `{kernel.name}` uses "
                    f"{', '.join(free)}, which this file does not always bind at module level: Triton's CPU "
                    "interpreter hands a kernel its own module's names (numpy as np, inspect, ...) where the file "
                    "lacks them; import at module level every name a kernel uses")


def _local_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names local to ``fn`` as Python scopes them: bound in its own scope (not in a comprehension, lambda or
    nested def inside it) and not declared ``global`` or ``nonlocal`` there. A local name never falls back to the
    module's globals, whether or not the binding runs."""
    declared = {name for n in ast.walk(fn) if isinstance(n, ast.Global | ast.Nonlocal) for name in n.names}
    return bound_names(fn) - declared


# Names Triton's interpreter module holds (it adds them to a kernel's globals where missing) that are not the
# modules a kernel file imports itself under the same name.
_INTERPRETER_NAMES = frozenset({"np", "inspect", "ast", "time", "textwrap", "dataclasses", "partial", "dataclass"})
_SAME_MODULES = frozenset({"tl", "triton", "math"})


@functools.lru_cache(maxsize=1)
def interpreter_names() -> frozenset[str]:
    """The names the installed Triton interpreter would add to a kernel's globals (a fixed list where it is not
    importable), less tl, triton and math, which are the modules of those names anyway."""
    try:
        from triton.runtime import interpreter
    except Exception:  # noqa: BLE001 - no Triton (or an older layout): the fixed list
        return _INTERPRETER_NAMES
    return (_INTERPRETER_NAMES | {k for k in vars(interpreter) if not k.startswith("__")}) - _SAME_MODULES


def _check_jit_bodies(tree: ast.Module, model: ModuleModel, out: _Collector) -> None:
    """A @triton.jit body is kernel code: only triton.language, other kernels and compile-time Python belong there
    (the rest of what Triton compiles: evaluator.static_kernel_body).

    On the GPU, torch inside a kernel fails to compile; under the CPU interpreter the body runs as Python,
    so torch there would do the math unseen (the runtime op recorder exempts the interpreter's frames).
    """
    for name, node in [(n, d) for n, defs in device_functions(tree, model).items() for d in defs]:
        names = decorator_names(node, model.aliases)
        if TRITON_JIT in names and names.index(TRITON_JIT) < len(names) - 1:
            under = node.decorator_list[names.index(TRITON_JIT) + 1]
            out.add("cuda-source", under.lineno, under.col_offset, f"kernel `{name}` has a decorator under "
                    "@triton.jit: Triton would be handed what that decorator returns (functools.wraps points the "
                    "CPU interpreter at another function's source), not the def the checker judged; put "
                    "@triton.jit directly above the def")
        # not its decorators: `@triton.heuristics({"FP16": lambda args: args["Y"].dtype == torch.float16})` runs on
        # the host at each launch and is judged as forward-path code there (evaluator.static_visitor)
        body = [child for child in ast.iter_child_nodes(node) if not any(child is d for d in node.decorator_list)]
        for inner in (n for child in body for n in ast.walk(child)):
            if isinstance(inner, ast.Name) and model.aliases.get(inner.id, "").split(".")[0] in ("torch", "numpy"):
                out.add("torch-compute", inner.lineno, inner.col_offset, f"kernel `{name}` uses `{inner.id}` "
                        "inside its body; kernels may use only triton.language (tl.*), math and other kernels")
                break


def _forward_path(tree: ast.Module, model: ModuleModel, entry: str, roots: list[str]) -> tuple[list[str], list[str]]:
    """What the entry point can run: ``roots`` and the stored references, but those kept only in module-level tables
    no running code reads (evaluator.static_unread). Reading a table on the forward path makes it read, which may
    add to the path: repeated until nothing changes (each round only shrinks the unread set). Also the roots with
    those stored references."""
    unread = unread_bindings(tree, model, entry)
    while True:
        start = roots + stored_roots(model, tree, unread, entry)
        path = reachable(model, start)
        again = unread_bindings(tree, model, entry, path)
        if again == unread:
            return path, start
        unread = again


def _analyse(tree: ast.Module, entry: str, allow: frozenset[str], out: _Collector, lines: list[str]
             ) -> StaticReport:
    model = build_model(tree)
    roots, entry_node = _entry_roots(tree, model, entry, out)
    check_entry_definition(tree, model, entry, out.report)
    check_rebinding(tree, model, model.imported, out.report)
    check_class_members(tree, out.report)
    check_hooks(tree, out.report)
    starts = roots + hook_roots(model) + implementation_roots(model, tree) + \
        [key for key in property_roots(tree) if key in model.functions]
    path, starts = _forward_path(tree, model, entry, starts)
    helpers = [key for key in made_helper_roots(model, tree, entry, path) if key not in path]
    if helpers:  # the methods of helper instances made while the model is built or runs, and what they reach
        path, starts = _forward_path(tree, model, entry, starts + helpers)
    launched: list[str] = []
    resolve_here = lambda n: _resolve(n, model.aliases)  # noqa: E731
    for key in path:
        fn = model.functions[key]
        for name, call in launch_sites(model, fn):
            empty = empty_launch(model, fn if not isinstance(fn, ast.Lambda) else None, call, name, resolve_here)
            if empty is not None:
                out.report("empty-grid", call, f"`{ast.unparse(call.func)}` launches `{name}` on an empty {empty} "
                           "(no program runs, so nothing is computed); use a grid of at least one program per "
                           "output block")
            elif name not in launched:
                launched.append(name)
    launched.extend(k for k in dict.fromkeys(passed_kernels(model, path)) if k not in launched)
    kernels = list(model.kernel_order)
    line = getattr(entry_node, "lineno", 1)
    if not kernels:
        out.add("no-kernel", line, 0, "no kernel found: write a @triton.jit kernel, compile CUDA with "
                "`kernelevo.cuda.compile(SOURCE, name)`, or build a load_inline extension, and launch it "
                "from forward")
    elif roots and not launched:
        names = ", ".join(kernels)
        forward = model.functions.get(roots[0])
        out.add("kernel-not-launched", getattr(forward, "lineno", line), 0, f"kernels ({names}) are defined "
                "but nothing reachable from the forward path launches one; call `kernel[grid](...)`, "
                "`kernel[grid, block](...)` or `ext.fn(...)` from forward or a function it calls")
    visitor = RuleVisitor(model, set(path), entry, allow, out.report, tree, starts)
    visitor.visit(tree)
    check_registrations(tree, resolve_here, model.custom_ops, out.report)
    check_call_state(tree, model, path, out.report)
    check_loggers(tree, resolve_here, model.parents, out.report)
    check_inspect(tree, resolve_here, model.parents, out.report)
    check_wrapping(tree, resolve_here, model.parents, out.report)
    check_jit_values(tree, resolve_here, model.parents, out.report)
    check_block_handles(tree, resolve_here, out.report)
    check_identity_reads(tree, resolve_here, model.constants.get, out.report)
    jitted = [fn for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
              and (TRITON_JIT in decorator_names(fn, model.aliases) or any(fn is d for d in model.jit_defs))]
    check_kernel_lines(lines, jitted, out.report)  # factories' kernels too
    _check_kernel_names(tree, model, jitted, out)
    for call in model.jit_unnamed:
        out.add("cuda-source", call.lineno, call.col_offset, "triton.jit is handed something other than a "
                "function's name; the checker judges a kernel's source lines only for `@triton.jit` on a def or "
                "`triton.jit(name)` / `triton.jit(fn=name)`: use one of those")
    check_shadowing(tree, out.report)
    _check_jit_bodies(tree, model, out)
    check_kernel_bodies(tree, jitted, model, out.report)
    _check_cuda_sources(tree, model, allow, out)
    first = launched[0] if launched else kernels[0] if kernels else None
    backend = model.kernel_backend.get(first, "unknown") if first else "unknown"
    ops = [f"{op.namespace}::{op.name}" for op in model.custom_ops.values()]
    return StaticReport(None, out.sorted(), backend, kernels, launched, ops, defines_backward(tree),
                        sorted(set(visitor.optional_imports)))


# Names under which autograd finds a way back: ``torch.autograd.Function`` runs ``backward`` or its alias ``vjp``;
# ``torch.library`` registers one with ``register_autograd`` (a function or an op's method).
_BACKWARD_NAMES = frozenset({"backward", "vjp"})
_AUTOGRAD_REGISTRATION = "register_autograd"


def defines_backward(tree: ast.Module) -> bool:
    """Whether the module may define a way back through autograd, so that it is also called as a training step
    calls it (evaluator.callplan). Over-inclusive on purpose: a false yes only adds calls an honest differentiable
    kernel passes, a false no lets a kernel right only off the training path go unjudged there. Yes for
    ``backward``/``vjp`` bound in a class body (a method, an assignment) or assigned as an attribute,
    ``register_autograd`` named anywhere (an attribute, an imported name, an alias), those names as strings (a
    ``type(...)`` namespace, an attribute set by name), an autograd dispatch key (``Library.impl(..., "Autograd")``)
    and a class deriving from a ``...Function`` base (an autograd Function of a library, whose backward it
    inherits)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            if any(_binds_backward(item) for item in node.body) or any(_function_base(b) for b in node.bases):
                return True
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Attribute) and t.attr in _BACKWARD_NAMES for t in targets):
                return True
        elif isinstance(node, ast.Attribute) and node.attr == _AUTOGRAD_REGISTRATION:
            return True
        elif isinstance(node, ast.Name) and node.id == _AUTOGRAD_REGISTRATION:
            return True
        elif isinstance(node, ast.alias) and _AUTOGRAD_REGISTRATION in (node.name, node.asname):
            return True
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                node.value in _BACKWARD_NAMES or node.value == _AUTOGRAD_REGISTRATION or "Autograd" in node.value):
            return True
    return False


def _binds_backward(item: ast.stmt) -> bool:
    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return item.name in _BACKWARD_NAMES
    if isinstance(item, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id in _BACKWARD_NAMES for t in item.targets)
    if isinstance(item, ast.AnnAssign):
        return isinstance(item.target, ast.Name) and item.target.id in _BACKWARD_NAMES
    return False


def _function_base(base: ast.expr) -> bool:
    """``Function``, ``torch.autograd.Function``, ``CheckpointFunction``...: the last name of the base ends so."""
    name = base.attr if isinstance(base, ast.Attribute) else base.id if isinstance(base, ast.Name) else ""
    return name.endswith("Function")


# A small honest candidate: checking it once loads what the checker inspects lazily (torch, triton).
_WARM_UP_SOURCE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        _copy_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
"""


@functools.cache
def warm_up() -> None:
    """Check a small candidate once per process, so the first real check does not pay for importing torch and
    triton (a session does this while its reference process starts; later sessions find it done)."""
    check_source(_WARM_UP_SOURCE, "<warm-up>")


def check_source(
    source: str, filename: str = "<candidate>", *, entry: str = "ModelNew", allow_torch: Sequence[str] = ()
) -> StaticReport:
    """Statically check a candidate's source; never raises, whatever the input.

    Messages say what is wrong and what to do; the file and line are the caller's to prefix
    (``f"{filename}:{v.line}: [{v.rule}] {v.message}"``), ``filename`` only names the file in parse errors.

    ``entry`` names the entry point: ``"ModelNew"`` (a class whose ``forward`` starts the forward path)
    or a function name (decorated-op candidates). ``allow_torch`` lists PyTorch ops the op spec allows
    on the forward path (``"torch.matmul"``, ``"matmul"`` or ``"aten.mm"``).
    """
    out = _Collector()
    try:
        tree = pyast.parse(source, filename=filename)
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError) as exc:
        line = getattr(exc, "lineno", None) or 1
        col = max((getattr(exc, "offset", None) or 1) - 1, 0)
        if isinstance(exc, SyntaxError):
            msg = f"{exc.msg}; fix the syntax"
        else:
            msg = f"cannot parse ({type(exc).__name__}: {exc}); keep the file plain UTF-8 text with shallow nesting"
        return StaticReport(Violation("syntax-error", line, col, msg))
    try:
        return _analyse(mangle(tree), entry, normalise_allow(allow_torch), out, pyast.source_lines(source))
    except RecursionError:
        out.add("too-complex", 1, 0, "the file nests expressions too deeply to check; split long or deeply "
                "nested expressions into smaller statements")
    except Exception as exc:  # noqa: BLE001 - never crash the evaluator; reject instead
        out.add("internal-error", 1, 0, f"the static checker failed on this file ({type(exc).__name__}: "
                f"{exc}); the candidate is rejected, please report this checker bug")
    return StaticReport(None, out.sorted())
