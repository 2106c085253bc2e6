"""The "tune" operator: rewrite launch parameters of any Triton candidate, deterministically.

Tunable knobs are found with ``ast`` (never regexes over code):

- module-level integer constants whose names say they are launch parameters
  (``BLOCK_SIZE = 1024``, ``NUM_WARPS = 8``, ``GROUP_M = 8``, ``ROW_TILE = 4096`` ...);
- integer keyword arguments at launch sites ``kernel[grid](..., BLOCK_M=64, num_warps=4)``.

Each tuning step changes one to three knobs, by a factor of two (now and then four) within safe
bounds; the choice is a pure function of the source and the seed, so a run is reproducible.
"""

from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass

from kernelevo import pyast

_KNOB = re.compile(r"^(BLOCK\w*|\w*_BLOCK\w*|TILE\w*|\w*_TILE|ROW_TILE|GROUP\w*|NUM_WARPS|NUM_STAGES|"
                   r"num_warps|num_stages|\w*BLOCK_SIZE\w*|MAX_BLOCK\w*|MIN_PROGRAMS)$")


def is_knob_name(name: str) -> bool:
    """Whether a module-level constant of this name is taken for a launch parameter."""
    return _KNOB.match(name) is not None


@dataclass(frozen=True)
class Knob:
    """One tunable integer literal in the source."""

    name: str
    value: int
    line: int  # 1-based
    col: int
    end_col: int
    where: str  # "constant" | "launch"


def _bounds(name: str) -> tuple[int, int]:
    lname = name.lower()
    if "warps" in lname:
        return 1, 16
    if "stages" in lname:
        return 1, 6
    if lname == "row_block":  # rows per program of the looped reduction
        return 1, 64
    if lname == "min_programs":  # programs a small shape should still launch (one or two per multiprocessor)
        return 16, 4096
    if lname.startswith("group"):
        return 1, 64
    if lname in ("block_m", "block_n", "block_k"):
        return 16, 256
    return 16, 65536


def find_knobs(source: str) -> list[Knob]:
    """Integer launch parameters in ``source`` (empty when it does not parse)."""
    try:
        tree = pyast.parse(source)
    except SyntaxError:
        return []
    knobs: list[Knob] = []

    def add(name: str, node: ast.AST, where: str) -> None:
        if isinstance(node, ast.Constant) and type(node.value) is int and _KNOB.match(name):
            if node.lineno == node.end_lineno and node.end_col_offset is not None:  # parsed nodes have both
                knobs.append(Knob(name, node.value, node.lineno, node.col_offset, node.end_col_offset, where))

    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            add(stmt.targets[0].id, stmt.value, "constant")
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            add(stmt.target.id, stmt.value, "constant")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
            for kw in node.keywords:
                if kw.arg:
                    add(kw.arg, kw.value, "launch")
    return knobs


def _neighbour(knob: Knob, rng: random.Random) -> int:
    lo, hi = _bounds(knob.name)
    v = knob.value
    power = v > 0 and (v & (v - 1)) == 0
    near = [v * 2, v // 2] if power else [v + max(1, v // 4), max(1, v - max(1, v // 4))]
    near = [o for o in near if lo <= o <= hi and o != v]
    far = [o for o in ([v * 4, v // 4] if power else []) if lo <= o <= hi and o != v]
    if far and (not near or rng.random() < 0.25):  # now and then a longer jump, out of a local optimum
        return rng.choice(far)
    return rng.choice(near) if near else v


def tune_source(source: str, seed: int, max_changes: int = 3) -> tuple[str, list[str]]:
    """Return (new source, human-readable changes). No knobs -> (source, [])."""
    knobs = find_knobs(source)
    if not knobs:
        return source, []
    rng = random.Random(f"{seed}:{len(source)}:{sum(map(ord, source)) % 1000003}")
    n = 1 if len(knobs) == 1 else rng.choice(list(range(1, max_changes + 1)))
    chosen = rng.sample(knobs, k=min(n, len(knobs)))
    lines = source.splitlines(keepends=True)
    changes = []
    for knob in sorted(chosen, key=lambda k: (k.line, k.col), reverse=True):
        new = _neighbour(knob, rng)
        if new == knob.value:
            continue
        line = lines[knob.line - 1]
        lines[knob.line - 1] = line[: knob.col] + str(new) + line[knob.end_col:]
        changes.append(f"{knob.name} {knob.value} -> {new} ({knob.where}, line {knob.line})")
    return "".join(lines), sorted(changes)


def knob_shared_memory(source: str, element_bytes: int = 2) -> int | None:
    """Shared memory a tiled matmul's knobs ask for (``BLOCK_M``, ``BLOCK_N``, ``BLOCK_K`` and the
    stage count, as constants or launch keywords): the pipelined A and B tiles, at fp16 sizes; None when
    the source has no such knobs. Read from the text only: a foreign source is never run to check it."""
    values: dict[str, int] = {}
    for knob in find_knobs(source):
        values.setdefault(knob.name.upper(), knob.value)
    if not {"BLOCK_M", "BLOCK_N", "BLOCK_K"} <= set(values):
        return None
    stages = values.get("NUM_STAGES", 3)
    return (values["BLOCK_M"] + values["BLOCK_N"]) * values["BLOCK_K"] * element_bytes * max(1, stages)
