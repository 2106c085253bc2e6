"""``ast.parse`` behind one process-wide lock.

CPython 3.11 keeps the AST converter's recursion depth in shared state, so two threads parsing at once
can fail with ``SystemError: AST constructor recursion depth mismatch`` (python/cpython#106905; seen in
CI when the LLM proposer parsed several replies concurrently). The search parses replies, tunes
sources and runs static checks on different threads, so every parse in the project goes through here.
"""

from __future__ import annotations

import ast
import re
import threading

_PARSE_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source, filename)``, safe to call from any thread (raises SyntaxError as it does)."""
    with _PARSE_LOCK:
        return ast.parse(source, filename=filename)


def parse_expression(source: str) -> ast.Expression:
    """``ast.parse(source, mode="eval")`` under the same lock (an annotation or other lone expression)."""
    with _PARSE_LOCK:
        return ast.parse(source, mode="eval")


def source_lines(source: str, *, keepends: bool = False) -> list[str]:
    """``source``'s lines as the tokenizer counts them, and so as ``ast`` line numbers (and
    ``inspect.getsourcelines``) do: broken at ``\r\n``, ``\r`` and ``\n`` only. ``str.splitlines`` also breaks at
    form feeds, vertical tabs, ``\x1c``-``\x1e``, ``\x85`` and U+2028/U+2029, which a comment may hold: its line
    numbers would drift from the parser's."""
    if keepends:
        return [line for line in re.split(r"(?<=\r\n)|(?<=\r)(?!\n)|(?<=\n)", source) if line]
    return re.split(r"\r\n|\r|\n", source)
