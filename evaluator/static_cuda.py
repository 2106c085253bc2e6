"""Static checks of CUDA C/C++ source held in a candidate's Python string constants.

The sources given to ``kernelevo.cuda.compile`` and ``load_inline`` (and any string constant that
defines a ``__global__`` function) are tokenised, with comments and literals removed, and searched for
identifiers that create streams or graphs, allocate device memory behind PyTorch's back, change the
persisting-L2 carve-out, synchronise the whole device, or start threads and processes; ``<<<...>>>``
launches must pass a stream (PyTorch's current one) as the fourth launch parameter.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

# Identifier -> why it is refused. A trailing "*" matches every identifier with that prefix.
BANNED_IDENTIFIERS: dict[str, str] = {
    "cudaStreamCreate*": "creates a side stream (work there escapes the timer)",
    "cuStreamCreate*": "creates a side stream (work there escapes the timer)",
    "getStreamFromPool": "takes a side stream from PyTorch's pool (work there escapes the timer)",
    "cudaStreamSetAttribute": "changes stream attributes (persisting-L2 tricks)",
    "cudaStreamBeginCapture": "captures a CUDA graph",
    "cudaDeviceSetLimit": "changes device limits (persisting-L2 carve-out)",
    "cuCtxSetLimit": "changes device limits (persisting-L2 carve-out)",
    "cudaLimitPersistingL2CacheSize": "reserves persisting L2 so data survives the cache flush",
    "accessPolicyWindow": "sets a persisting-L2 access policy so data survives the cache flush",
    "cudaCtxResetPersistingL2Cache": "manipulates persisting L2 lines",
    "cudaLaunchHostFunc": "runs host code from a stream callback",
    "cudaMalloc*": "allocates device memory outside PyTorch's allocator",
    "cuMemAlloc*": "allocates device memory outside PyTorch's allocator",
    "cudaDeviceSynchronize": "synchronises the whole device",
    "cudaGraph*": "builds CUDA graphs",
    "cuGraph*": "builds CUDA graphs",
    "pthread_create": "starts a host thread",
    "fork": "starts a process",
    "popen": "starts a process",
    "fopen": "does file I/O",
    "dlopen": "loads native code",
}

# Fourth ``<<<>>>`` parameters that mean "not PyTorch's current stream".
_DEFAULT_STREAMS = {"", "0", "0u", "0U", "nullptr", "NULL", "cudaStreamLegacy", "cudaStreamPerThread"}

_IDENT = re.compile(r"[A-Za-z_]\w*")
_CLEAN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


@dataclass(frozen=True)
class SourceFinding:
    """One problem in a CUDA source: 0-based line inside the source, column, and message."""

    line: int
    col: int
    message: str


def _blank(match: re.Match[str]) -> str:
    text = match.group(0)
    return "".join("\n" if ch == "\n" else " " for ch in text)


def strip_comments_and_literals(source: str) -> str:
    """The source with comments and string/char literals blanked (newlines kept, so lines still match)."""
    return _CLEAN.sub(_blank, source)


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset)
    col = offset - (text.rfind("\n", 0, offset) + 1)
    return line, col


def _banned_reason(ident: str) -> str | None:
    reason = BANNED_IDENTIFIERS.get(ident)
    if reason is not None:
        return reason
    for pattern, why in BANNED_IDENTIFIERS.items():
        if pattern.endswith("*") and ident.startswith(pattern[:-1]):
            return why
    return None


def _launch_params(text: str, start: int) -> tuple[list[str], int] | None:
    """Top-level comma-separated parameters of a ``<<<...>>>`` starting after ``start``."""
    end = text.find(">>>", start)
    if end < 0:
        return None
    params, depth, current = [], 0, []
    for ch in text[start:end]:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            params.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    params.append("".join(current).strip())
    return params, end


def scan_source(source: str) -> list[SourceFinding]:
    """Problems in one CUDA C/C++ source string (banned identifiers, launches without a stream)."""
    text = strip_comments_and_literals(source)
    findings = []
    for match in _IDENT.finditer(text):
        why = _banned_reason(match.group(0))
        if why is not None:
            line, col = _position(text, match.start())
            findings.append(
                SourceFinding(
                    line, col, f"CUDA source uses `{match.group(0)}`, which {why}; remove it and let "
                    "PyTorch own streams, memory and device state"
                )
            )
    pos = text.find("<<<")
    while pos >= 0:
        parsed = _launch_params(text, pos + 3)
        if parsed is None:
            break
        params, end = parsed
        if len(params) < 4 or params[3] in _DEFAULT_STREAMS:
            line, col = _position(text, pos)
            findings.append(
                SourceFinding(
                    line, col, "kernel launch `<<<...>>>` does not pass a stream, so it runs on the legacy "
                    "default stream; pass PyTorch's current stream as the 4th launch parameter: "
                    "`<<<grid, block, smem, at::cuda::getCurrentCUDAStream()>>>`"
                )
            )
        pos = text.find("<<<", end + 3)
    return findings


def source_pieces(
    expr: ast.AST, constants: dict[str, list[ast.expr]], _seen: frozenset[str] = frozenset()
) -> Iterator[ast.Constant | None]:
    """The string constants a source expression is built from; ``None`` for a part known only at run time.

    Follows module-level names, ``+``/``%`` concatenation, f-strings, lists/tuples, ``.format(...)``
    and ``"sep".join([...])``. A ``None`` means the checker cannot see the whole source.
    """
    if isinstance(expr, ast.Constant):
        if isinstance(expr.value, str):
            yield expr
        elif not isinstance(expr.value, int | float | bool) and expr.value is not None:
            yield None
    elif isinstance(expr, ast.Name):
        values = constants.get(expr.id)
        if not values or expr.id in _seen:
            yield None
            return
        for value in values:
            yield from source_pieces(value, constants, _seen | {expr.id})
    elif isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add | ast.Mod):
        yield from source_pieces(expr.left, constants, _seen)
        yield from source_pieces(expr.right, constants, _seen)
    elif isinstance(expr, ast.JoinedStr):
        for value in expr.values:
            yield from source_pieces(value, constants, _seen)
    elif isinstance(expr, ast.FormattedValue):
        yield from source_pieces(expr.value, constants, _seen)
    elif isinstance(expr, ast.List | ast.Tuple):
        for elt in expr.elts:
            yield from source_pieces(elt, constants, _seen)
    elif (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr in ("format", "join")
    ):
        yield from source_pieces(expr.func.value, constants, _seen)
        for arg in [*expr.args, *(kw.value for kw in expr.keywords)]:
            yield from source_pieces(arg, constants, _seen)
    else:
        yield None
