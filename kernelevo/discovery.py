"""Static discovery of ops: parse files with ``ast``, never import repository code.

Two kinds of op are found: functions/classes decorated with ``kernelevo.optimize`` (under any alias),
and KernelBench task files (a module-level ``class Model`` plus ``get_inputs``). Files that do not
parse are reported with file and line and do not stop the scan. Diffing (which ops a pull request
added, changed or removed) is a pure function over two ``{op_id: source_hash}`` maps; git access lives at
the edge, in :mod:`kernelevo.discovery_git`.
"""

from __future__ import annotations

import ast
import errno
import os
import stat
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kernelevo import pyast
from kernelevo.globs import glob_matches
from kernelevo.op import definition_hash, file_hash, op_id
from kernelevo.pyast import source_lines

# A file is parsed only if its text contains one of these (cheap pre-filter for 10,000-file repos).
_MARKERS = ("kernelevo", "get_inputs")
ALWAYS_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".tox", ".nox", ".mypy_cache",
                                 ".ruff_cache", ".pytest_cache", "node_modules"})


@dataclass(frozen=True)
class DiscoveredOp:
    """One op found statically. ``cases``/``small_cases`` are None when not visible without running."""

    op_id: str
    path: str  # relative, forward slashes
    qualname: str
    kind: str  # "function" | "module" | "method" | "task"
    line: int
    source_hash: str
    cases: int | None = None
    small_cases: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class DiscoveryError:
    """A file that could not be scanned: where, and why (not fatal for the scan)."""

    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line or 0}: {self.message}"

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class DiscoveryResult:
    ops: list[DiscoveredOp] = field(default_factory=list)
    errors: list[DiscoveryError] = field(default_factory=list)
    files_scanned: int = 0

    def hashes(self) -> dict[str, str]:
        """``{op_id: source_hash}``, the input of :func:`diff_ops`."""
        return {op.op_id: op.source_hash for op in self.ops}


@dataclass
class OpDiff:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def diff_ops(before: dict[str, str], after: dict[str, str]) -> OpDiff:
    """Ops added, changed (source hash differs) or removed between two ``{op_id: hash}`` maps."""
    return OpDiff(
        added=sorted(set(after) - set(before)),
        changed=sorted(k for k in set(before) & set(after) if before[k] != after[k]),
        removed=sorted(set(before) - set(after)),
    )


# ---------------------------------------------------------------------------------------------- globs


def path_matches(rel_path: str, patterns: list[str] | tuple[str, ...]) -> bool:
    """Whether a relative path (forward slashes) matches any glob; a directory glob covers its files."""
    return any(glob_matches(p, rel_path) or glob_matches(p.rstrip("/") + "/**", rel_path) for p in patterns)


def is_selected(rel_path: str, include: list[str], exclude: list[str]) -> bool:
    """The config's rule: a ``.py`` file is scanned when it matches include and no exclude glob."""
    return (rel_path.endswith(".py") and path_matches(rel_path, include)
            and not path_matches(rel_path, exclude))


def iter_python_files(root: Path, include: list[str], exclude: list[str]):
    """Relative paths of ``.py`` files under ``root`` selected by the globs, excluded dirs pruned; symlinks are
    never followed (a linked folder is not entered, a linked file is left out)."""
    root = Path(root)
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        dirnames[:] = sorted(
            d for d in dirnames
            if d not in ALWAYS_SKIPPED_DIRS and not path_matches(rel_dir + d + "/", exclude)
        )
        for name in sorted(filenames):
            rel = rel_dir + name
            if is_selected(rel, include, exclude) and not os.path.islink(os.path.join(dirpath, name)):
                yield rel


# ------------------------------------------------------------------------------------------ parsing


class _Aliases:
    """Names under which ``kernelevo`` and ``kernelevo.optimize`` are visible in one module."""

    def __init__(self) -> None:
        self.modules: set[str] = set()  # e.g. {"kernelevo", "ke"}
        self.functions: set[str] = set()  # e.g. {"optimize", "opt"}

    def collect(self, tree: ast.Module) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == "kernelevo" or alias.name.startswith("kernelevo."):
                        if alias.asname:
                            if alias.name in ("kernelevo", "kernelevo.op"):
                                self.modules.add(alias.asname)
                        else:
                            self.modules.add("kernelevo")
                            if alias.name == "kernelevo.op":
                                self.modules.add("kernelevo.op")
            elif isinstance(node, ast.ImportFrom) and node.module in ("kernelevo", "kernelevo.op"):
                for alias in node.names:
                    if alias.name == "optimize":
                        self.functions.add(alias.asname or "optimize")
                    elif alias.name == "op" and node.module == "kernelevo":
                        self.modules.add(alias.asname or "op")

    def is_optimize(self, decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        dotted = _dotted(target)
        if dotted is None:
            return False
        if "." not in dotted:
            return dotted in self.functions
        module, _, attr = dotted.rpartition(".")
        return attr == "optimize" and module in self.modules


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


# Module-level functions of a file, by name.
_Functions = Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef]


def _literal_cases(node: ast.expr | None, functions: _Functions) -> int | None:
    """Cases visible statically: a lambda (or a module-level def with one ``return``) returning a
    list/tuple literal; its length is the number of cases."""
    if node is None:
        return None
    if isinstance(node, ast.Name) and node.id in functions:
        fn = functions[node.id]
        returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)]
        body = returns[0].value if len(returns) == 1 else None
    elif isinstance(node, ast.Lambda):
        body = node.body
    else:
        return None
    if isinstance(body, (ast.List, ast.Tuple)) and not any(isinstance(e, ast.Starred) for e in body.elts):
        return len(body.elts)
    return None


def _keyword(decorator: ast.expr, name: str) -> ast.expr | None:
    if isinstance(decorator, ast.Call):
        for kw in decorator.keywords:
            if kw.arg == name:
                return kw.value
    return None


def discover_source(text: str, rel_path: str) -> tuple[list[DiscoveredOp], list[DiscoveryError]]:
    """Ops defined in one file's text (pure: no I/O). A syntax error is returned, not raised."""
    rel_path = rel_path.replace(os.sep, "/")
    if not any(marker in text for marker in _MARKERS):
        return [], []
    try:
        tree = pyast.parse(text, filename=rel_path)
    except SyntaxError as exc:
        return [], [DiscoveryError(rel_path, exc.lineno, f"does not parse: {exc.msg}")]
    except ValueError as exc:  # e.g. null bytes
        return [], [DiscoveryError(rel_path, None, f"does not parse: {exc}")]
    except (RecursionError, MemoryError):  # an expression nested too deeply for the parser (a.b.b.b..., - - - a)
        return [], [DiscoveryError(rel_path, None, "does not parse: an expression is nested too deeply for Python's "
                                   "parser; split it up")]
    lines = source_lines(text.replace("\r\n", "\n"), keepends=True)  # once per file: every op's hash reads them
    # the def/class each qualname names, as kernelevo.op.find_definition finds it
    first: dict[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = {}
    aliases = _Aliases()
    if "kernelevo" in text:
        aliases.collect(tree)
    top_functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    ops: list[DiscoveredOp] = []
    errors: list[DiscoveryError] = []

    def visit(body: list[ast.stmt], prefix: str, in_class: bool) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qualname = prefix + node.name
                # this walk visits the statements in kernelevo.op.find_definition's order: the first node of a
                # qualname is the one source_hash(text, qualname) hashes wherever the op is checked later
                first.setdefault(qualname, node)
                decorator = next((d for d in node.decorator_list if aliases.is_optimize(d)), None)
                if decorator is not None:
                    if isinstance(node, ast.ClassDef):
                        kind = "module"
                    else:
                        kind = "method" if in_class else "function"
                    ops.append(DiscoveredOp(
                        op_id=op_id(rel_path, qualname), path=rel_path, qualname=qualname, kind=kind,
                        line=node.lineno, source_hash=definition_hash(lines, first[qualname]),
                        cases=_literal_cases(_keyword(decorator, "inputs"), top_functions),
                        small_cases=_literal_cases(_keyword(decorator, "small_inputs"), top_functions),
                    ))
                is_class = isinstance(node, ast.ClassDef)
                visit(node.body, qualname + ("." if is_class else ".<locals>."), is_class)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for block in (node.body, getattr(node, "orelse", []), getattr(node, "finalbody", [])):
                    visit(block, prefix, in_class)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body, prefix, in_class)

    if aliases.modules or aliases.functions:
        visit(tree.body, "", False)
    task = _task_op(tree, text, rel_path, top_functions)
    if task is not None:
        ops.append(task)
    return ops, errors


def _task_op(tree: ast.Module, text: str, rel_path: str, functions: _Functions) -> DiscoveredOp | None:
    """A KernelBench task file: module-level ``class Model`` and ``def get_inputs``."""
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if model is None or "get_inputs" not in functions:
        return None
    if "get_cases" in functions:
        cases = _literal_cases(ast.Name(id="get_cases"), functions)
    else:
        cases = 1
    small = None
    if "get_small_cases" in functions:
        small = _literal_cases(ast.Name(id="get_small_cases"), functions)
    return DiscoveredOp(op_id=op_id(rel_path, "Model"), path=rel_path, qualname="Model", kind="task",
                        line=model.lineno, source_hash=file_hash(text), cases=cases,
                        small_cases=small)


def _decode(data: bytes, rel_path: str) -> str | DiscoveryError:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return DiscoveryError(rel_path, None, f"not UTF-8 ({exc.reason} at byte {exc.start})")


def discover(root: Path | str, include: list[str] | None = None, exclude: list[str] | None = None,
             files: list[str] | None = None) -> DiscoveryResult:
    """Scan the working tree under ``root`` (or only ``files``, paths relative to root) for ops.

    ``include``/``exclude`` default to the repo's ``.github/kernelevo.yml`` (read here; a bad config
    raises :class:`kernelevo.repo_config.RepoConfigError`).
    """
    root = Path(root)
    if include is None or exclude is None:
        from kernelevo.repo_config import load_repo_config_for

        config = load_repo_config_for(root)
        include = config.paths.include if include is None else include
        exclude = config.paths.exclude if exclude is None else exclude
    if files is None:
        candidates = iter_python_files(root, include, exclude)
    else:
        normalised = (f.replace(os.sep, "/") for f in files)
        candidates = (f for f in normalised if is_selected(f, include, exclude))
    result = DiscoveryResult()
    for rel in candidates:
        try:
            data = read_inside(root, rel)
        except FileNotFoundError:
            continue  # a changed file that was deleted has no ops
        except OSError as exc:
            result.errors.append(DiscoveryError(rel, None, f"cannot read: {exc.strerror}"))
            continue
        if data is not None:
            add_source_file(result, rel, data)
    return result


_NO_LINKS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def read_inside(root: Path, rel: str) -> bytes | None:
    """The bytes of the regular file ``rel`` under ``root``, reached one component at a time without following a
    symlink; ``None`` for a symlink (of the file or of a folder on the way), ``..``, or anything but a regular
    file, so a checkout however made cannot make discovery read outside it."""
    parts = [part for part in rel.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        return None
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            try:
                inner = os.open(part, _NO_LINKS | os.O_DIRECTORY, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    return None
                raise
            os.close(fd)
            fd = inner
        try:
            file_fd = os.open(parts[-1], _NO_LINKS, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return None
            raise
    finally:
        os.close(fd)
    with os.fdopen(file_fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read()


def add_source_file(result: DiscoveryResult, rel: str, data: bytes) -> None:
    result.files_scanned += 1
    if b"kernelevo" not in data and b"get_inputs" not in data:
        return
    text = _decode(data, rel)
    if isinstance(text, DiscoveryError):
        result.errors.append(text)
        return
    ops, errors = discover_source(text, rel)
    result.ops.extend(ops)
    result.errors.extend(errors)
