"""Dormant imports: a module-level import whose names only code that never runs in the verifier reads.

Kernel libraries import for the code paths they carry for other setups: fla's ``fla.utils`` imports ``shutil`` and
``pathlib`` for ``has_usable_nvcc`` (is a TileLang toolchain on this host?), which only its TileLang backend's
``is_available`` calls, and its norm module imports ``torch.distributed`` (``DeviceMesh``, ``distribute_module``,
``ParallelStyle``) for ``NormParallel``, a tensor-parallel plan nobody builds. Neither is ever used in the verifier:
the names are read only where nothing runs. Refusing the import would refuse the library; accepting every import of
those modules would hand a candidate the file system and collectives. The rule learns the difference from where the
names are read, never from what the module is called.

An import is dormant when it stands at module level (``import m`` / ``from m import a``, every name it binds) and:

* the module is one whose import does nothing but define names: the standard library (but the few modules that act
  when imported: ``antigravity``, ``this``, ``turtle``...) or a submodule of torch or triton, packages the candidate
  imports anyway. Whether the import may happen at all is the run time's question (its import wrappers refuse what
  is not listed: ``evaluator.import_policy.RUNTIME_IMPORT_ROOTS``, and ``RUNTIME_ONLY_IMPORTS``, shutil and pathlib);
* each name it binds is bound nowhere else in the file (no assignment, ``del``, ``global``, ``def``/``class`` or
  second import of that name: the name the checker sees is the module's) and is never named in a string annotation
  (``torch.library`` and ``typing`` evaluate those in the module);
* each name is read (an import nothing reads serves nothing: remove it), and every read is in code that never
  runs (``evaluator.static_liveness``): the body or the annotations of a module-level function or method nothing
  running refers to (annotations are never called, and are kept only in ``__annotations__``, which refused dunder
  access reads back; but without ``from __future__ import annotations`` a parameter or return annotation is
  evaluated when the ``def`` runs, so a read there counts only when the annotation is the plain dotted name itself:
  ``SEEN[shutil]`` hands the module to ``SEEN``), or the base list of a module-level class that no code names at all
  (outside parameter and return annotations), that has no decorator or keyword (no metaclass) and whose bases are
  all plain dotted names (a base expression runs with the class statement): deriving from a class runs none of its
  methods, and no instance of the new class is ever made. Decorators and default values of such a function run at
  definition, so a read there is a read by running code.

A name read by running code anywhere keeps the import refused, with the rest of that code's findings.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable

from evaluator.static_model import ModuleModel
from evaluator.static_uses import binding_counts, in_annotation, in_inert_annotation

# Standard-library modules that do something when imported (open a browser, print, start a GUI or a shell).
_ACTING_ON_IMPORT = frozenset({"antigravity", "this", "__hello__", "__phello__", "idlelib", "turtle", "turtledemo",
                               "tkinter", "pydoc", "webbrowser", "site", "sitecustomize", "usercustomize", "pdb"})
_QUIET_PACKAGES = ("torch", "triton")
_FUNCTION = (ast.FunctionDef, ast.AsyncFunctionDef)


def quiet_module(module: str) -> bool:
    """Importing ``module`` only defines names (the standard library but its acting modules; torch's and triton's
    submodules)."""
    root = module.split(".")[0]
    if root in _QUIET_PACKAGES:
        return True
    return root in sys.stdlib_module_names and root not in _ACTING_ON_IMPORT and not root.startswith("_")


def _bound_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    return [(a.asname or a.name).split(".")[0] for a in node.names]


def _other_bindings(tree: ast.Module, imports: set[int]) -> set[str]:
    """Names bound anywhere other than by the given import statements (ids of their alias nodes)."""
    return set(binding_counts(tree, imports))


def _named_in_strings(tree: ast.Module, parents: dict[int, ast.AST]) -> set[str]:
    """Every identifier-like word of a string inside an annotation (``torch.library`` and ``typing`` evaluate
    string annotations in the module's namespace)."""
    words: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and in_annotation(node, parents):
            text = "".join(c if c.isalnum() or c == "_" else " " for c in node.value)
            words.update(text.split())
    return words


def _signature_annotations(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    args = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs, fn.args.vararg, fn.args.kwarg]
    return [a.annotation for a in args if a is not None and a.annotation is not None] + ([fn.returns] if fn.returns
                                                                                          else [])


def _dead_body_reads(tree: ast.Module, model: ModuleModel, live: set[str]) -> set[int]:
    """ids of the Name nodes in the bodies and annotations of module-level functions and methods that never run.
    Without ``from __future__ import annotations`` a parameter or return annotation is evaluated when the ``def``
    runs, and may hand what it names to running code (``SEEN[shutil]`` makes the module a key of a dict): a read there
    counts only when the annotation is the plain dotted name itself (``mesh: DeviceMesh``)."""
    out: set[int] = set()
    future = _future_annotations(tree)

    def take(fn: ast.FunctionDef | ast.AsyncFunctionDef, key: str) -> None:
        if model.functions.get(key) is not fn or key in live:
            return
        running = {id(n) for part in [*fn.decorator_list, *fn.args.defaults,
                                      *(d for d in fn.args.kw_defaults if d is not None)]
                   for n in ast.walk(part)}  # fmt: skip
        if not future:
            running.update(id(n) for part in _signature_annotations(fn) if not _dotted_name(part)
                           for n in ast.walk(part))  # fmt: skip
        out.update(id(n) for n in ast.walk(fn) if isinstance(n, ast.Name) and id(n) not in running)

    for stmt in tree.body:
        if isinstance(stmt, _FUNCTION):
            take(stmt, stmt.name)
        elif isinstance(stmt, ast.ClassDef):
            for item in stmt.body:
                if isinstance(item, _FUNCTION):
                    take(item, f"{stmt.name}.{item.name}")
    return out


def _future_annotations(tree: ast.Module) -> bool:
    """The module has ``from __future__ import annotations`` (its annotations stay strings nothing here evaluates)."""
    return any(isinstance(s, ast.ImportFrom) and s.module == "__future__" and any(a.name == "annotations"
               for a in s.names) for s in tree.body)  # fmt: skip


def _dotted_name(node: ast.AST) -> bool:
    """``name`` or ``name.attr.attr``: a plain (dotted) name, nothing called, bound or chosen."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _unnamed_class_bases(tree: ast.Module, model: ModuleModel, live: set[str]) -> set[int]:
    """ids of the base expressions' Name nodes of module-level classes no code names (annotations aside), without
    decorators or keywords, none of whose methods runs, whose bases are all plain dotted names."""
    named = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
             and not in_inert_annotation(n, model.parents)}  # fmt: skip
    out: set[int] = set()
    for stmt in tree.body:
        if not isinstance(stmt, ast.ClassDef) or model.classes.get(stmt.name) is not stmt:
            continue
        if stmt.name in named or stmt.decorator_list or stmt.keywords:
            continue
        if any(k.startswith(stmt.name + ".") for k in live) or not all(_dotted_name(b) for b in stmt.bases):
            continue  # a base expression runs when the class statement does: only plain names read nothing
        out.update(id(n) for base in stmt.bases for n in ast.walk(base) if isinstance(n, ast.Name))
    return out


def dormant_imports(tree: ast.Module, model: ModuleModel, live: set[str]) -> tuple[set[int], set[str]]:
    """(ids of the dormant module-level import statements, the names they bind) (module docstring)."""
    candidates = [s for s in tree.body if isinstance(s, ast.Import | ast.ImportFrom)
                  and not (isinstance(s, ast.ImportFrom) and (s.level or not s.module))]  # fmt: skip
    if not candidates:
        return set(), set()
    imports = {id(a) for s in candidates for a in s.names}
    rebound = _other_bindings(tree, imports)
    in_strings = _named_in_strings(tree, model.parents)
    quiet_reads = _dead_body_reads(tree, model, live) | _unnamed_class_bases(tree, model, live)
    reads: dict[str, list[ast.Name]] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            reads.setdefault(n.id, []).append(n)
    bound_by: dict[str, int] = {}
    for stmt in candidates:
        for name in _bound_names(stmt):
            bound_by[name] = bound_by.get(name, 0) + 1
    nodes: set[int] = set()
    names: set[str] = set()
    for stmt in candidates:
        modules = [a.name for a in stmt.names] if isinstance(stmt, ast.Import) else [stmt.module or ""]
        if not all(quiet_module(m) for m in modules) or any(a.name == "*" for a in stmt.names):
            continue
        bound = _bound_names(stmt)
        if all(bound_by[b] == 1 and b not in rebound and b not in in_strings and reads.get(b)
               and all(id(r) in quiet_reads for r in reads[b]) for b in bound):  # fmt: skip
            nodes.add(id(stmt))
            names.update(bound)
    return nodes, names



# -- names only a type checker binds ------------------------------------------------------------------------------

def type_checking_names(tree: ast.Module, resolve: Callable[[ast.AST], str | None]) -> set[str]:
    """Names bound only by imports in module-level ``if TYPE_CHECKING:`` blocks, in a module under ``from __future__
    import annotations``: unbound when the program runs (the block never runs), so an annotation naming one is a
    string nothing evaluates -- and a library that evaluates it (``typing.get_type_hints``, ``torch.library``) gets
    a NameError, never the object. fla's cross entropy imports ``ProcessGroup`` so for its ``process_group:
    ProcessGroup | None`` parameters. Only reads in annotations are accepted (the visitor); any other read is judged
    as a read of what the import names."""
    if not _future_annotations(tree):
        return set()
    guarded: set[int] = set()
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.If) and resolve(stmt.test) == "typing.TYPE_CHECKING" and not stmt.orelse:
            for item in stmt.body:
                if isinstance(item, ast.Import | ast.ImportFrom):
                    guarded.update(id(a) for a in item.names)
                    names.update(_bound_names(item))
    if not names:
        return set()
    elsewhere = _other_bindings(tree, guarded)
    return {n for n in names if n not in elsewhere}
