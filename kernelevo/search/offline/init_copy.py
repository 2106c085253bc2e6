"""``ModelNew.__init__`` as the reference builds its model: the task's own constructor, replayed.

A generated module must be a drop-in ``ModelNew``: ``ModelNew(*get_init_inputs())`` takes the same
arguments and creates the same parameters and buffers, with the same values for the same seed. The
verifier refuses a ``ModelNew`` that uses or inherits ``Model``, so the constructor is copied as a
syntax tree: ``Model.__init__`` (the reference's other methods but ``forward``, which the constructor may
call) plus the module-level statements it needs (imports, constants, helper classes and functions),
with ``Model`` renamed. Nothing of the copy runs on the forward path; the verifier checks the result like
any candidate. :func:`constructor` returns None where the copy cannot be made (no ``Model`` class, a
name the generated module itself binds), and the caller falls back to plain parameters of the traced
shapes.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from kernelevo import pyast
from kernelevo.search.offline.tune import is_knob_name

# names the generated module binds itself; a task that binds them differently cannot be copied
RESERVED = {"torch", "triton", "tl", "nn", "ModelNew", "broadcast_strides", "round_half_even", "div_by_scalar",
            "MAX_ROW_COLS"}
_TASK_HOOKS = {"get_inputs", "get_init_inputs", "get_cases", "get_small_cases", "hbm_bytes", "flops",
               "TOLERANCE", "Model"}


@dataclass(frozen=True)
class Constructor:
    """The copied pieces: module-level statements (source, in task order) and the class body's methods."""

    preamble: list[str]
    methods: list[str]  # ``def __init__(...)`` first, then helpers it may call (indented for the class)
    has_init: bool


class _Rename(ast.NodeTransformer):
    """``Model`` -> ``ModelNew`` (``super(Model, self).__init__()`` is the KernelBench idiom)."""

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id == "Model":
            return ast.copy_location(ast.Name("ModelNew", node.ctx), node)
        return node


def _bound(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    names = set()
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for t in targets:
            names |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _used(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def nn_module() -> type:
    import torch

    return torch.nn.Module


def constructor(task_source: str) -> Constructor | None:
    """The reference's constructor and what it needs, as source to put in the generated module."""
    try:
        tree = pyast.parse(task_source)
    except SyntaxError:
        return None
    model = next((s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == "Model"), None)
    if model is None:
        return None
    methods = [s for s in model.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
               and s.name != "forward"]
    init = next((m for m in methods if m.name == "__init__"), None)
    if init is None:
        return Constructor([], [], has_init=False)
    called = {n.attr for n in ast.walk(init) if isinstance(n, ast.Attribute)}
    helpers = [m for m in methods if m is not init and m.name in called and not m.name.startswith("__")
               and not hasattr(nn_module(), m.name)]  # overriding nn.Module's own methods is refused
    methods = [init, *helpers]
    statements = [s for s in tree.body if s is not model and not (_bound(s) & _TASK_HOOKS)]
    needed: set[str] = set()
    for m in methods:
        needed |= _used(m)
    chosen: list[ast.stmt] = []
    changed = True
    while changed:  # the module-level statements that bind what the copy uses, transitively
        changed = False
        for s in statements:
            if s not in chosen and _bound(s) & needed:
                chosen.append(s)
                needed |= _used(s)
                changed = True
    bound: set[str] = set()
    for s in chosen:
        bound |= _bound(s)
    if bound & RESERVED - {"torch", "nn"} or any(is_knob_name(n) or n.endswith("_kernel") for n in bound):
        return None  # it would rebind a name of the generated module (or be taken for a launch parameter)
    for s in chosen:  # `torch` and `nn` may only be what the generated module imports
        if isinstance(s, (ast.Import, ast.ImportFrom)) and _bound(s) & {"torch", "nn"}:
            text = ast.unparse(s)
            if text not in ("import torch", "from torch import nn", "import torch.nn as nn"):
                return None
    order = [s for s in tree.body if s in chosen]
    rename = _Rename()
    preamble = [ast.unparse(rename.visit(s)) for s in order
                if ast.unparse(s) not in ("import torch", "from torch import nn", "import torch.nn as nn")]
    texts = []
    for m in methods:
        text = ast.unparse(rename.visit(m))
        texts.append("\n".join("    " + line if line else line for line in text.splitlines()))
    return Constructor(preamble, texts, has_init=True)
