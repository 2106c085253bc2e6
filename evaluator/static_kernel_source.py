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
import re
from collections.abc import Callable, Iterable, Sequence

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


def source_lines(source: str) -> list[str]:
    """``source``'s lines as the tokenizer (and ``ast`` line numbers, and ``inspect.getsourcelines``) count them."""
    return re.split(r"\r\n|\r|\n", source)


def check_kernel_lines(lines: Sequence[str], kernels: Iterable[ast.FunctionDef | ast.AsyncFunctionDef],
                       report: Report) -> None:
    """Report every source line of ``kernels`` that would start the kernel for the CPU interpreter."""
    for kernel in kernels:
        for number in hidden_definitions(lines, kernel):
            where = ast.Pass(lineno=number, col_offset=0)
            report("cuda-source", where, f"line {number} of Triton kernel `{kernel.name}` begins with `def ` "
                   "inside the kernel (a string's line): Triton's CPU interpreter compiles a kernel from its last "
                   "such line, so it would run code the checker never saw; remove the line or reword it")
