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
