"""Static checks of CUDA C/C++ source held in a candidate's Python string constants.

The sources given to ``kernelevo.cuda.compile`` and ``load_inline`` (and any string constant that
defines a ``__global__`` function) are tokenised, with comments and literals removed, and searched for
identifiers that create streams or graphs, allocate device memory behind PyTorch's back, change the
persisting-L2 carve-out, synchronise the whole device, or start threads and processes. A ``<<<...>>>``
launch either passes a stream (PyTorch's current one) as its fourth parameter or none at all: a launch
without one goes to the legacy default stream, as most real ``load_inline`` code does, and the runtime
GPU trace checks which stream each kernel ran on. Named other streams (``cudaStreamPerThread``,
``cudaStreamLegacy``), stream creation and per-thread default streams (``--default-stream per-thread``,
``CUDA_API_PER_THREAD_DEFAULT_STREAM``) stay refused.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from evaluator.static_rules import cxx_op_computes, method_computes

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
    "getStreamFromExternal": "wraps a stream PyTorch does not own",
    "getDefaultCUDAStream": "launches on the default stream instead of PyTorch's current one",
    "cudaStreamPerThread": "launches on a per-thread stream instead of PyTorch's current one",
    "cudaStreamLegacy": "launches on the legacy stream instead of PyTorch's current one",
    "pthread_create": "starts a host thread",
    "fork": "starts a process",
    "popen": "starts a process",
    "system": "runs a shell command",
    "execv*": "replaces the process",
    "execl*": "replaces the process",
    "fopen": "does file I/O",
    "dlopen": "loads native code",
    "dlsym": "looks up native functions by name",
    "cudaGetDriverEntryPoint*": "looks up driver functions by name",
    "cuGetProcAddress*": "looks up driver functions by name",
}
# Math libraries: calling them is "the library does the math" unless the op spec allows it.
LIBRARY_PREFIXES = ("cublas", "cudnn", "cufft", "cusparse", "cusolver")

_PER_THREAD = re.compile(r"default-stream(?![\s=]+legacy\b)|\bper-thread\b|CUDA_API_PER_THREAD_DEFAULT_STREAM")

_IDENT = re.compile(r"[A-Za-z_]\w*")
_QUALIFIED = re.compile(r"\b(?:torch|at|c10)(?:\s*::\s*\w+)+")
_METHOD_CALL = re.compile(r"\.\s*(\w+)\s*(?:<[^<>();]*>)?\s*\(")
_HIDING = [
    (re.compile(r"\busing\s+namespace\s+(?:torch|at)\b|\bnamespace\s+\w+\s*=\s*(?:torch|at)\b"),
     "hides which PyTorch functions are called; write qualified names such as torch::empty_like"),
    (re.compile(r"##"), "(token pasting) hides identifiers from the checker; write names out in full"),
    (re.compile(r"\bstd\s*::\s*(?:thread|jthread|async)\b"),
     "starts host threads that can work after the timer stops; remove it"),
]  # fmt: skip
_QUOTED_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"', re.M)
_CLEAN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


@dataclass(frozen=True)
class SourceFinding:
    """One problem in a CUDA source: 0-based line inside the source, column, and message."""

    line: int
    col: int
    message: str


@dataclass(frozen=True)
class SourcePiece:
    """One string constant a source is built from: the node (where it stands) and its text."""

    node: ast.Constant
    text: str


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


def _torch_findings(text: str, allow: frozenset[str]) -> Iterator[tuple[int, str]]:
    """(offset, message) for PyTorch compute and math-library calls made from C++."""
    for match in _QUALIFIED.finditer(text):
        names = [p.strip() for p in match.group(0).split("::")[1:]]
        bad = [n for n in names if cxx_op_computes(n, allow)]
        if bad:
            yield match.start(), (f"C++ calls PyTorch op `{match.group(0)}`; do the math in your own kernel "
                                  "(PyTorch may only allocate, view and cast)")
    for match in _METHOD_CALL.finditer(text):
        if method_computes(match.group(1), allow):
            yield match.start(), (f"C++ calls tensor method `.{match.group(1)}()`; do the math in your own "
                                  "kernel (PyTorch may only allocate, view and cast)")
    for match in _IDENT.finditer(text):
        ident = match.group(0)
        lib = next((p for p in LIBRARY_PREFIXES if ident.lower().startswith(p)), None)
        if lib is not None and lib not in allow:
            yield match.start(), (f"C++ calls `{ident}` from {lib}, so the library does the math; write the "
                                  "kernel yourself (or have the op spec allow the library)")
    for pattern, why in _HIDING:
        for match in pattern.finditer(text):
            yield match.start(), f"C++ `{match.group(0)}` {why}"


def scan_source(source: str, allow: frozenset[str] = frozenset()) -> list[SourceFinding]:
    """Problems in one CUDA C/C++ source string (banned identifiers, torch compute, hidden names, includes).

    ``allow`` holds op names the op spec allows (``matmul``, or a library prefix such as ``cublas``).
    """
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
    for offset, message in _torch_findings(text, allow):
        findings.append(SourceFinding(*_position(text, offset), message))
    for match in _QUOTED_INCLUDE.finditer(source):
        findings.append(SourceFinding(*_position(source, match.start()), "`#include \"...\"` reads a file by "
                                      "path; include only <system> headers and keep the code in the source"))
    for match in _PER_THREAD.finditer(text):
        findings.append(SourceFinding(*_position(text, match.start()), f"`{match.group(0)}` selects per-thread "
                                      "default streams, so launches leave the timed stream; remove it"))
    return findings


def source_pieces(
    expr: ast.AST, constants: dict[str, list[ast.expr]], _seen: frozenset[str] = frozenset()
) -> Iterator[SourcePiece | None]:
    """The string constants a source expression is built from; ``None`` for a part known only at run time.

    Follows module-level names, ``+``/``%`` concatenation, f-strings, lists/tuples, ``.format(...)``
    and ``"sep".join([...])``. A ``None`` means the checker cannot see the whole source.
    """
    if isinstance(expr, ast.Constant):
        if isinstance(expr.value, str):
            yield SourcePiece(expr, expr.value)
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


# -- source templates: ``def _source(threads): return f"...#define THREADS {threads:d}..."`` ------------------

_WORD_CHAR = re.compile(r"\w")


def _integer_placeholder(values: list[ast.expr], i: int, params: frozenset[str]) -> bool:
    """``{p:d}`` of a parameter, standing as its own token: what it prints (``-?[0-9]+``, or a ValueError for
    anything but an integer) can neither form nor complete an identifier, so any digits scan alike."""
    node = values[i]
    if not (isinstance(node, ast.FormattedValue) and isinstance(node.value, ast.Name) and node.value.id in params
            and node.conversion == -1 and isinstance(node.format_spec, ast.JoinedStr)):  # fmt: skip
        return False
    spec = node.format_spec.values
    if not (len(spec) == 1 and isinstance(spec[0], ast.Constant) and spec[0].value == "d"):
        return False
    if i == 0 or i == len(values) - 1:
        return False  # a neighbour outside this f-string could join the digits to a name
    before, after = values[i - 1], values[i + 1]
    return (isinstance(before, ast.Constant) and isinstance(before.value, str) and before.value != ""
            and isinstance(after, ast.Constant) and isinstance(after.value, str) and after.value != ""
            and not _WORD_CHAR.match(before.value[-1]) and not _WORD_CHAR.match(after.value[0]))  # fmt: skip


def expand_template(expr: ast.AST, functions: Mapping[str, ast.AST]) -> ast.AST:
    """``helper(args)`` -> the f-string ``helper`` returns, its ``{param:d}`` placeholders printed as ``0``.

    Only for a module-level, undecorated function whose body is one ``return`` (after a docstring) and whose
    parameters appear nowhere else in it; anything else is returned unchanged (and judged as before: a source
    built at run time is refused).
    """
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name)):
        return expr
    fn = functions.get(expr.func.id)
    if not isinstance(fn, ast.FunctionDef) or fn.decorator_list:
        return expr
    body = [st for st in fn.body if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or not isinstance(body[0].value, ast.JoinedStr):
        return expr
    args = fn.args
    params = frozenset(a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs])
    if args.vararg or args.kwarg or args.defaults or args.kw_defaults:
        return expr
    template = body[0].value
    values = list(template.values)
    expanded: list[ast.expr] = []
    for i, value in enumerate(values):
        if _integer_placeholder(values, i, params):
            expanded.append(ast.copy_location(ast.Constant("0"), value))
        else:
            expanded.append(value)
    result = ast.copy_location(ast.JoinedStr(values=expanded), template)
    if any(isinstance(n, ast.Name) and n.id in params for n in ast.walk(result)):
        return expr  # a parameter used any other way: its text is known only at run time
    return result
