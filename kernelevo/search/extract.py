"""Pull a candidate module out of a model's reply (pure functions, no I/O).

Real replies wrap code in markdown fences (```python, ```py, bare ```), split it across several
blocks (kernels in one, ``ModelNew`` in another), surround it with prose, or stop mid-way when the
token limit hits. :func:`extract_candidate` handles each case and says plainly why it gave up.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from kernelevo import pyast

_PY_LANGS = {"python", "py", "python3", "", "triton"}


@dataclass(frozen=True)
class Block:
    """One fenced block: its language tag, text, and whether its closing fence was seen."""

    lang: str
    text: str
    closed: bool


@dataclass(frozen=True)
class Extraction:
    """The candidate source, or the reason there is none."""

    source: str | None
    error: str | None = None
    note: str = ""  # e.g. "merged 2 blocks"


def fenced_blocks(reply: str) -> list[Block]:
    """Markdown code blocks in order; an unclosed last block is returned with ``closed=False``."""
    blocks: list[Block] = []
    lang: str | None = None
    lines: list[str] = []
    fence = ""
    for line in reply.splitlines():
        stripped = line.strip()
        if lang is None:
            if stripped.startswith("```") or stripped.startswith("~~~"):
                fence = stripped[:3]
                lang = stripped[3:].strip().lower().split()[0] if stripped[3:].strip() else ""
                lines = []
        elif stripped.startswith(fence) and stripped.strip("`~") == "":
            blocks.append(Block(lang, "\n".join(lines), True))
            lang = None
        else:
            lines.append(line)
    if lang is not None:
        blocks.append(Block(lang, "\n".join(lines), False))
    return blocks


def _parses(code: str) -> ast.Module | None:
    try:
        return pyast.parse(code)
    except SyntaxError:
        return None


def _defines(tree: ast.Module, cls: str = "ModelNew") -> bool:
    return any(isinstance(n, ast.ClassDef) and n.name == cls for n in tree.body)


def _has_kernels(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                text = ast.unparse(dec)
                if "jit" in text or "autotune" in text or "heuristics" in text:
                    return True
        if isinstance(node, ast.Assign) and "compile" in ast.unparse(node.value):
            return True
        if isinstance(node, ast.Assign) and "__global__" in ast.unparse(node.value):
            return True
    return False


def _unfenced_code(reply: str) -> str | None:
    """The longest tail-trimmed run of lines that parses as Python and defines ModelNew."""
    lines = reply.splitlines()
    starts = [i for i, line in enumerate(lines)
              if line.startswith(("import ", "from ", "@triton", "class ", "def ", "#"))]
    for start in starts:
        for end in range(len(lines), start, -1):
            code = "\n".join(lines[start:end])
            tree = _parses(code)
            if tree is not None and _defines(tree):
                return code
    return None


def extract_candidate(reply: str, finish_reason: str | None = None) -> Extraction:
    """Return the candidate module in ``reply`` (see the module docstring for the cases)."""
    truncated = finish_reason == "length"
    if not reply or not reply.strip():
        return Extraction(None, "the reply is empty")
    blocks = [b for b in fenced_blocks(reply) if b.lang in _PY_LANGS]
    if not blocks:
        code = _unfenced_code(reply)
        if code is None:
            if truncated:
                return Extraction(None, "the reply was cut off at the token limit (finish_reason=length) "
                                        "before any complete code; raise max_tokens or ask for less prose")
            return Extraction(None, "no code in the reply: expected a ```python block defining class ModelNew")
        return Extraction(code, note="code without fences")
    parsed = [(b, _parses(b.text)) for b in blocks]
    with_model = [(b, t) for b, t in parsed if t is not None and _defines(t)]
    if not with_model:
        unclosed = any(not b.closed for b in blocks)
        if truncated or unclosed:
            return Extraction(None, "the reply was cut off (finish_reason=length or an unclosed code block) "
                                    "before ModelNew was complete; raise max_tokens or ask for shorter code")
        broken = [b for b, t in parsed if t is None and "ModelNew" in b.text]
        if broken:
            try:
                pyast.parse(broken[-1].text)
            except SyntaxError as exc:
                return Extraction(None, f"the code block defining ModelNew does not parse: line {exc.lineno}: "
                                        f"{exc.msg}")
        return Extraction(None, "no code block defines class ModelNew")
    block, tree = with_model[-1]  # the last complete version is the model's final answer
    if not _has_kernels(tree):
        kernels = [b.text for b, t in parsed if t is not None and b is not block and _has_kernels(t)
                   and not _defines(t)]
        if kernels:
            merged = "\n\n".join(kernels + [block.text])
            if _parses(merged) is not None:
                return Extraction(merged, note=f"merged {len(kernels) + 1} blocks")
    return Extraction(block.text, note="" if block.closed else "last block unclosed but complete")


def classify_strategy(source: str, backend: str = "triton") -> str:
    """The MAP-Elites cell of a candidate from its kernels' structure, so LLM-written kernels land in
    the same cells as offline ones: matmul-tiled (``tl.dot``), rowwise-looped (a loop plus a
    reduction), rowwise-1pass (a reduction, no loop), pointwise-* otherwise; "cuda-*" for CUDA."""
    tree = _parses(source)
    if tree is None:
        return "unknown"
    calls: set[str] = set()
    loops = 0
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        if backend == "triton" and not any("jit" in ast.unparse(d) for d in fn.decorator_list):
            continue
        for node in ast.walk(fn):
            if isinstance(node, (ast.For, ast.While)):
                loops += 1
            elif isinstance(node, ast.Call):
                calls.add(ast.unparse(node.func).split(".")[-1])
    if backend == "cuda":
        text = source
        if "mma" in text or "wmma" in text:
            return "cuda-matmul"
        if "__shfl" in text or "__syncthreads" in text:
            return "cuda-reduction"
        return "cuda-pointwise"
    if "dot" in calls or "dot_scaled" in calls:
        return "matmul-tiled"
    if calls & {"sum", "max", "min", "reduce", "argmax", "argmin", "cumsum", "associative_scan"}:
        return "rowwise-looped" if loops else "rowwise-1pass"
    return "pointwise-looped" if loops else "pointwise-tile2d"
