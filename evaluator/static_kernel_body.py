"""What a ``@triton.jit`` body may hold: what Triton's compiler compiles.

On a GPU a kernel body is compiled: blocks are values of the device program, and the compiler accepts a small
part of Python (``tl`` operations, the kernel's own jit functions, a few builtins, compile-time arithmetic on
``tl.constexpr`` values). Triton's CPU interpreter instead runs the body as Python, where a block is a host object
backed by a numpy array: anything beyond that part would run on the host, over the block's values, where the kernel
should (its text ``str(block)``, ``float(block)``, lists and comprehensions of values, ``math.exp`` of them, a plain
Python function handed in as a constexpr). A kernel body is therefore held to what the compiler would accept:

* no comprehension, lambda, dict or set display, and a list display only as a call's argument (a shape:
  ``tl.zeros([BLOCK_M, BLOCK_N], ...)``);
* an f-string or ``%``/``.format`` of a string only inside ``tl.static_assert``/``device_assert``/``device_print``,
  ``print`` or an ``assert`` (messages);
* calls: ``triton.language`` operations, the file's jit functions, methods of blocks (``x.to(...)``: the handle is
  refused elsewhere), and ``range``/``len``/``min``/``max``/``print``/``isinstance``/``getattr``; any other callable
  (``float``, ``int``, ``str``, ``sum``, ``math.*``, ``triton.cdiv``, a module function, a constexpr parameter, which
  the launch may hand any function) only with compile-time arguments: literals, module-level names,
  ``tl.constexpr`` parameters, a value's ``dtype``/``shape``/``type``/``element_ty``/``numel``/``value``, and
  locals computed only from those.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from evaluator.static_model import ModuleModel, resolve

Report = Callable[[str, ast.AST, str], None]

_TRITON_OPS = ("triton.language.",)
_COMPILED_BUILTINS = frozenset({"range", "len", "min", "max", "print", "isinstance", "getattr"})
_MESSAGE_CALLS = frozenset({"triton.language.static_assert", "triton.language.device_assert",
                            "triton.language.device_print", "triton.language.static_print", "print"})
_COMPILE_TIME_ATTRS = frozenset({"dtype", "shape", "type", "element_ty", "numel", "value", "primitive_bitwidth",
                                 "scalar", "block_shape"})
_CONSTEXPR = "triton.language.constexpr"


def check_kernel_body(kernel: ast.FunctionDef | ast.AsyncFunctionDef, model: ModuleModel, jit_names: set[str],
                      report: Report) -> None:
    """Report (rule ``cuda-source``) what in ``kernel``'s body Triton's compiler would not compile."""
    name = kernel.name
    constant, local = _compile_time_names(kernel, model)
    judge = _Judge(model, jit_names, constant, local)
    for node in (n for stmt in kernel.body for n in ast.walk(stmt)):  # the body: decorators run on the host
        if isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp | ast.Lambda
                      | ast.Dict | ast.Set):
            report("cuda-source", node, f"kernel `{name}` builds Python containers ({type(node).__name__}); "
                   "Triton compiles none, and the CPU interpreter would compute with them on the host: use blocks")
        elif isinstance(node, ast.List) and not isinstance(model.parents.get(id(node)), ast.Call | ast.keyword):
            report("cuda-source", node, f"kernel `{name}` builds a Python list; lists stand only as a shape "
                   "argument (tl.zeros([M, N], ...)): use blocks")
        elif isinstance(node, ast.JoinedStr) and not _in_message(node, model):
            report("cuda-source", node, f"kernel `{name}` formats a string outside a message (an f-string of a "
                   "block is its values as text on the host); f-strings belong in tl.static_assert or "
                   "tl.device_print")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and _is_text(node.left) \
                and not _in_message(node, model):
            report("cuda-source", node, f"kernel `{name}` formats a string with % outside a message")
        elif isinstance(node, ast.Call):
            why = judge.call(node)
            if why:
                report("cuda-source", node, f"kernel `{name}` calls {why}, which Triton's compiler runs only at "
                       "compile time, on tl.constexpr values; with a block it would run on the host in the CPU "
                       "interpreter: use triton.language operations")


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) or isinstance(node, ast.JoinedStr)


def _in_message(node: ast.AST, model: ModuleModel) -> bool:
    up = model.parents.get(id(node))
    while up is not None and not isinstance(up, ast.FunctionDef | ast.AsyncFunctionDef):
        if isinstance(up, ast.Assert):
            return True
        if isinstance(up, ast.Call):
            target = resolve(up.func, model.aliases) or (up.func.id if isinstance(up.func, ast.Name) else "")
            return target in _MESSAGE_CALLS
        up = model.parents.get(id(up))
    return False


def _compile_time_names(kernel: ast.FunctionDef | ast.AsyncFunctionDef, model: ModuleModel
                        ) -> tuple[set[str], set[str]]:
    """(names whose values are known when the kernel compiles, the kernel's parameters and locals): ``tl.constexpr``
    parameters, and locals every assignment of which is compile-time. Other names are globals, looked up when the
    kernel compiles (:meth:`_Judge.compile_time`)."""
    args = [*kernel.args.posonlyargs, *kernel.args.args, *kernel.args.kwonlyargs]
    constant = {a.arg for a in args if a.annotation is not None and resolve(a.annotation, model.aliases) == _CONSTEXPR}
    params = {a.arg for a in args}
    stores: dict[str, list[ast.AST | None]] = {}
    for node in ast.walk(kernel):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for n in ast.walk(target):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                        stores.setdefault(n.id, []).append(node.value if isinstance(target, ast.Name) else None)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
            stores.setdefault(node.target.id, []).append(node.value if isinstance(node, ast.AnnAssign) else None)
        elif isinstance(node, ast.For | ast.comprehension):
            for n in ast.walk(node.target):
                if isinstance(n, ast.Name):
                    stores.setdefault(n.id, []).append(None)  # a loop variable may be a runtime value
        elif isinstance(node, ast.NamedExpr | ast.withitem):
            bound: ast.expr | None = node.target if isinstance(node, ast.NamedExpr) else node.optional_vars
            for n in ast.walk(bound) if bound is not None else ():
                if isinstance(n, ast.Name):
                    stores.setdefault(n.id, []).append(None)
    constant -= set(stores)  # a constexpr parameter assigned again holds what it was assigned
    judge = _Judge(model, set(), constant, params | set(stores))
    changed = True
    while changed:
        changed = False
        for local, values in stores.items():
            if local not in constant and local not in params and values and all(
                    v is not None and judge.compile_time(v) for v in values):
                constant.add(local)
                changed = True
    return constant, params | set(stores)


class _Judge:
    def __init__(self, model: ModuleModel, jit_names: set[str], constant: set[str],
                 local: set[str] | None = None) -> None:
        self.model, self.jit_names, self.constant = model, jit_names, constant
        self.local = local if local is not None else set()

    def compile_time(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.Name):
            return node.id in self.constant or node.id not in self.local and node.id not in self.jit_names
        if isinstance(node, ast.Attribute):
            return node.attr in _COMPILE_TIME_ATTRS or resolve(node, self.model.aliases) is not None
        if isinstance(node, ast.Subscript):
            return self.compile_time(node.value) and self.compile_time(node.slice)
        if isinstance(node, ast.Tuple | ast.List):
            return all(self.compile_time(e) for e in node.elts)
        if isinstance(node, ast.BinOp):
            return self.compile_time(node.left) and self.compile_time(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.compile_time(node.operand)
        if isinstance(node, ast.BoolOp):
            return all(self.compile_time(v) for v in node.values)
        if isinstance(node, ast.Compare):
            return self.compile_time(node.left) and all(self.compile_time(c) for c in node.comparators)
        if isinstance(node, ast.IfExp):
            return all(self.compile_time(n) for n in (node.test, node.body, node.orelse))
        if isinstance(node, ast.Call):
            target = resolve(node.func, self.model.aliases)
            arguments = [*node.args, *(k.value for k in node.keywords)]
            if target == _CONSTEXPR:
                return all(self.compile_time(a) for a in arguments)
            if target is not None and target.startswith(_TRITON_OPS) or isinstance(node.func, ast.Name) and \
                    node.func.id in self.jit_names or isinstance(node.func, ast.Attribute) and target is None:
                return False  # a Triton operation, a jit function or a block's method: a value of the program
            return all(self.compile_time(a) for a in arguments)  # a host function evaluated at compile time
        return False

    def call(self, node: ast.Call) -> str | None:
        """None when the call is one Triton compiles; else what is called, for the message."""
        func = node.func
        target = resolve(func, self.model.aliases)
        if target is not None and target.startswith(_TRITON_OPS):
            return None
        if isinstance(func, ast.Name) and (func.id in self.jit_names or func.id in _COMPILED_BUILTINS
                                           and func.id not in self.model.binding_counts):
            return None
        if isinstance(func, ast.Attribute) and target is None and not _is_text(func.value):
            return None  # a block's method (x.to(...), x.sum(...)); its handle is refused elsewhere
        arguments = [*node.args, *(k.value for k in node.keywords)]
        if all(self.compile_time(a) for a in arguments):
            return None
        if isinstance(func, ast.Name) and func.id in self.constant:
            return (f"its constexpr parameter `{func.id}` on a block (the interpreter would run whatever function "
                    "the launch hands in; choose by a constexpr string, `if ACT == \"gelu\": v = gelu(v)`, or call "
                    "the jit function by name)")
        return f"`{ast.unparse(func)}` on a value known only when the kernel runs"
