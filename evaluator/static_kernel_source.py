"""A Triton kernel's source as the CPU interpreter reads it.

Triton's interpreter re-reads a kernel's source text and compiles the kernel from the last line that begins with
``def `` (after its indentation); the GPU compiler parses from the first. A string in the kernel (a
``tl.static_assert`` message, a docstring, a decorator's argument) whose lines begin with ``def `` would make the
interpreter run a function the checker never saw, while the GPU runs the one it did. No honest kernel needs such a
line: a line of a string constant in a Triton device function, its decorators included, that begins with ``def `` is
refused.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

Report = Callable[[str, ast.AST, str], None]


def hidden_definition(value: str | bytes) -> bool:
    """Whether a string constant holds a line, after its first, that begins with ``def `` once indented (pure)."""
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    return any(line.lstrip().startswith("def ") for line in text.splitlines()[1:])


def check_kernel_strings(kernels: Iterable[ast.FunctionDef | ast.AsyncFunctionDef], report: Report) -> None:
    """Report every string constant of ``kernels`` (bodies, decorators, defaults) that hides a definition."""
    for kernel in kernels:
        for node in ast.walk(kernel):
            if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes) and hidden_definition(node.value):
                report("cuda-source", node, f"a string in Triton kernel `{kernel.name}` holds a line beginning with "
                       "`def `: Triton's CPU interpreter compiles a kernel from its last such line, so it would run "
                       "code the checker never saw; remove the line or reword it")
