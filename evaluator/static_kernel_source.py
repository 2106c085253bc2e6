"""A Triton kernel's source as the CPU interpreter reads it.

Triton's interpreter re-reads a kernel's source lines and compiles the kernel from the last line that begins with
``def `` (after its indentation); the GPU compiler parses from the first. A string in the kernel (a
``tl.static_assert`` message, a docstring, a decorator's argument; after a backslash-newline its first line starts a
source line too) whose lines begin with ``def `` would make the interpreter run a function the checker never saw,
while the GPU runs the one it did. No honest kernel needs such a line: the kernel's source lines (decorators to its
last line) are judged as the interpreter reads them, and any that begins with ``def `` other than the kernel's own
``def`` line is refused.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Sequence

from evaluator.static_model import TRITON_JIT

Report = Callable[[str, ast.AST, str], None]


def hidden_definitions(lines: Sequence[str], kernel: ast.FunctionDef | ast.AsyncFunctionDef) -> list[int]:
    """The 1-based numbers of ``kernel``'s source lines, other than its own ``def``, that begin with ``def `` once
    indented (pure; ``lines``: the file's lines)."""
    first = min([kernel.lineno, *(d.lineno for d in kernel.decorator_list)])
    last = kernel.end_lineno or kernel.lineno
    return [number for number in range(first, min(last, len(lines)) + 1) if number != kernel.lineno and
            any(piece.strip().startswith("def ") for piece in [lines[number - 1], *lines[number - 1].splitlines()])]


WRAPS, UPDATE_WRAPPER = "functools.wraps", "functools.update_wrapper"


def check_wrapping(tree: ast.Module, resolve: Callable[[ast.AST], str | None], parents: dict[int, ast.AST],
                   report: Report) -> None:
    """``functools.wraps``/``update_wrapper`` give an object a ``__wrapped__``, through which
    ``inspect.getsourcelines`` -- the CPU interpreter's way to a kernel's source -- reads another function. Allowed
    only on the file's own new wrappers: ``@functools.wraps(fn)`` directly on a def, ``update_wrapper(w, ...)`` of a
    def ``w`` of the file; never on anything else (a kernel's ``.fn``)."""
    defs = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        called = resolve(node.func)
        if called == UPDATE_WRAPPER:
            target = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "wrapper"), None)
            if not (isinstance(target, ast.Name) and target.id in defs):
                report("patching", node, "functools.update_wrapper on something other than a function of this file "
                       "sets its __wrapped__ (what inspect and Triton's interpreter read in its place); wrap only "
                       "your own wrapper functions")
        elif called == WRAPS:
            owner = parents.get(id(node))
            if not (isinstance(owner, ast.FunctionDef | ast.AsyncFunctionDef) and node in owner.decorator_list):
                report("patching", node, "functools.wraps(...) used other than as a decorator of a def sets "
                       "__wrapped__ on whatever it is applied to; use it as @functools.wraps(fn) on your wrapper")


def check_jit_values(tree: ast.Module, resolve: Callable[[ast.AST], str | None], parents: dict[int, ast.AST],
                     report: Report) -> None:
    """``triton.jit`` only as a decorator or called right there (``triton.jit(k)``, ``triton.jit(debug=True)(k)``):
    where it is handed on as a value (``partial(triton.jit)``, a table, an alias, an argument) the checker cannot
    see which functions it makes kernels of, and a function it does not know is a kernel is never judged as one
    (its free names would be the interpreter's numpy)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Name | ast.Attribute) or not isinstance(node.ctx, ast.Load):
            continue
        path = resolve(node) or ""
        if _other_path_to_a_decorator(path) and not isinstance(parents.get(id(node)), ast.Attribute):
            report("cuda-source", node, f"`{path}` is Triton's `{path.rsplit('.', 1)[-1]}` reached by another path "
                   "(the checker knows kernels by `triton.jit`, `triton.autotune` and `triton.heuristics`): write "
                   f"`triton.{path.rsplit('.', 1)[-1]}`")
            continue
        if path != TRITON_JIT or isinstance(parents.get(id(node)), ast.Attribute):
            continue  # triton.jit.x: an attribute of it, judged by its own name
        up = parents.get(id(node))
        if isinstance(up, ast.Call) and up.func is node:
            continue  # triton.jit(k), or a factory call triton.jit(...) whose own use is judged below
        if isinstance(up, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node in up.decorator_list:
            continue
        report("cuda-source", node, "triton.jit is used as a value (handed on, stored or aliased): the checker "
               "judges a kernel only where triton.jit stands as a decorator or is called on a def's name; write "
               "`@triton.jit` above the kernel's def")


# Triton's decorators and the classes behind them, known to the checker only by their public names: elsewhere in
# Triton the same objects are re-exported (``triton.language.random.jit`` *is* ``triton.jit``), and a kernel made
# under such a name would not be judged as one.
_DECORATORS = frozenset({"jit", "autotune", "heuristics", "JITFunction", "InterpretedFunction", "Autotuner",
                         "Heuristics", "constexpr_function"})
_PUBLIC_DECORATORS = frozenset({"triton.jit", "triton.autotune", "triton.heuristics"})


def _other_path_to_a_decorator(path: str) -> bool:
    return path.startswith("triton.") and path not in _PUBLIC_DECORATORS and path.rsplit(".", 1)[-1] in _DECORATORS


# What the CPU interpreter keeps behind a Triton block: ``block.handle`` is its ``TensorHandle``, whose ``.data`` is
# a numpy array; on a GPU it is the compiler's IR value. No kernel or launcher needs either.
INTERPRETER_HANDLE = "handle"


def check_block_handles(tree: ast.Module, resolve: Callable[[ast.AST], str | None], report: Report) -> None:
    """A block's ``handle`` read anywhere in the file (``x.handle``, ``getattr(x, "handle")``, an ``attrgetter`` of
    it, a class pattern's ``handle=`` keyword): under the CPU interpreter it hands kernel code (or a helper a kernel
    calls) the block's numpy array, whose operators do the math on the host where Triton should."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            found = node.attr == INTERPRETER_HANDLE
        elif isinstance(node, ast.MatchClass):
            found = INTERPRETER_HANDLE in node.kwd_attrs
        elif isinstance(node, ast.Call) and (resolve(node.func) or getattr(node.func, "id", "")) in _READERS:
            found = any(isinstance(a, ast.Constant) and isinstance(a.value, str)
                        and INTERPRETER_HANDLE in a.value.split(".") for a in node.args)
        else:
            found = False
        if found:
            report("introspection", node, "`.handle` reads the Triton interpreter's representation of a block (a "
                   "numpy array on CPU, an IR value on a GPU): math on it is not done by your kernel; use "
                   "triton.language operations on the block itself")


_READERS = frozenset({"getattr", "builtins.getattr", "hasattr", "builtins.hasattr", "operator.attrgetter"})


def check_kernel_lines(lines: Sequence[str], kernels: Iterable[ast.FunctionDef | ast.AsyncFunctionDef],
                       report: Report) -> None:
    """Report every source line of ``kernels`` that would start the kernel for the CPU interpreter."""
    for kernel in kernels:
        for number in hidden_definitions(lines, kernel):
            where = ast.Pass(lineno=number, col_offset=0)
            report("cuda-source", where, f"line {number} of Triton kernel `{kernel.name}` begins with `def ` "
                   "inside the kernel (a string's line): Triton's CPU interpreter compiles a kernel from its last "
                   "such line, so it would run code the checker never saw; remove the line or reword it")
