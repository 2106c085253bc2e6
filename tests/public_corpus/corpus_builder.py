"""Turn an installed kernel library's source into a verifier candidate, the way a user would paste it.

The repository holds none of the libraries' code. At test time the builder locates the installed
package without importing it (``importlib.util.find_spec`` of the top-level name only), reads the kernel
module's source as text, and follows its imports of the library's own modules: each of those is pasted
too, dependencies first, with the library-internal import lines removed (replaced by ``pass`` where a
block would otherwise be empty, and by ``name = original`` where the import renamed something). Then
the adapter (``class ModelNew``, ours) is appended. Nothing else of the library's text is changed.

Pure functions over text, except :func:`package_root` and :func:`read_module` (the file system).
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


class BuildError(Exception):
    """The library's source cannot be pasted into one module as it stands (the message says where and why)."""


@dataclass(frozen=True)
class ModuleSource:
    """One module of the library: its dotted name, the path shown in the candidate, and its text."""

    name: str
    relpath: str
    text: str


@dataclass(frozen=True)
class InternalImport:
    """An import statement naming a library-internal module (``from pkg.x import a``)."""

    module: str  # absolute dotted module the names come from
    names: tuple[tuple[str, str | None], ...]  # (name, asname)
    lineno: int
    end_lineno: int
    col: int
    sole_statement: bool  # the only statement of its block: must become ``pass``
    type_checking_only: bool  # under ``if TYPE_CHECKING:``: never runs, so it pulls in no dependency


@dataclass
class Candidate:
    """A built candidate: its source and where every piece came from."""

    source: str
    modules: list[str]  # pasted library modules, in paste order
    removed_imports: list[str] = field(default_factory=list)  # "module:line: text" of each removed line
    shadowed: list[str] = field(default_factory=list)  # names two pasted modules bind to different things
    origins: list[str | None] = field(default_factory=list)  # per candidate line: "pkg/file.py:N", "adapter", None

    def origin(self, line: int) -> str:
        """Where candidate line ``line`` (1-based) came from: the library file and line, or the adapter."""
        where = self.origins[line - 1] if 0 < line <= len(self.origins) else None
        return where or "inserted by the paste"


def package_root(package: str) -> Path:
    """The installed package's directory, found without importing it (find_spec of a top-level name)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise BuildError(f"package {package!r} is not installed (pip install it into the venv)")
    return Path(next(iter(spec.submodule_search_locations)))


def distribution_version(distribution: str) -> str | None:
    """The installed version of a distribution, or None when it is not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def module_path(root: Path, package: str, module: str) -> Path | None:
    """The file of ``module`` (a module or a package's ``__init__``) inside the package at ``root``."""
    parts = module.split(".")
    if parts[0] != package:
        return None
    base = root.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def read_module(root: Path, package: str, module: str) -> ModuleSource:
    """Read one library module as text (never imported)."""
    path = module_path(root, package, module)
    if path is None:
        raise BuildError(f"{module}: no such module in {root}")
    return ModuleSource(module, f"{package}/{path.relative_to(root).as_posix()}", path.read_text(encoding="utf-8"))


def _absolute(module: str | None, level: int, current: str, is_package: bool) -> str:
    if level == 0:
        return module or ""
    base = current.split(".") if is_package else current.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _blocks(value: object) -> list[list[ast.stmt]]:
    """Statement blocks held by one AST field: a body itself, or the bodies of except handlers / match cases."""
    if not isinstance(value, list) or not value:
        return []
    if isinstance(value[0], ast.stmt):
        return [value]
    return [item.body for item in value if isinstance(item, ast.excepthandler | ast.match_case)]


def internal_imports(source: ModuleSource, package: str, is_package: bool,
                     reexports: Mapping[str, str] | None = None) -> list[InternalImport]:
    """Every import of the library's own modules in ``source`` (module level and nested), in line order.

    ``reexports`` maps a package that only re-exports names (its ``__init__`` imports half the library)
    to the module that defines them, which is pasted instead."""
    reexports = reexports or {}
    try:
        tree = ast.parse(source.text)
    except SyntaxError as exc:
        raise BuildError(f"{source.relpath}:{exc.lineno}: does not parse ({exc.msg})") from exc
    found: list[InternalImport] = []

    def visit_body(body: list[ast.stmt], type_checking: bool) -> None:
        internal = [_internal(s) for s in body]
        for stmt, target in zip(body, internal):
            if target is None:
                for name, value in ast.iter_fields(stmt):
                    inner_tc = type_checking or (isinstance(stmt, ast.If) and name == "body"
                                                 and _is_type_checking(stmt.test))
                    for block in _blocks(value):
                        visit_body(block, inner_tc)
                continue
            if isinstance(stmt, ast.Import):
                raise BuildError(f"{source.relpath}:{stmt.lineno}: `import {target}` binds the library's "
                                 "module object, which cannot be pasted; this module needs another adapter")
            names = tuple((a.name, a.asname) for a in stmt.names)
            found.append(InternalImport(reexports.get(target, target), names, stmt.lineno,
                                        stmt.end_lineno or stmt.lineno, stmt.col_offset,
                                        all(t is not None for t in internal), type_checking))

    def _internal(stmt: ast.stmt) -> str | None:
        if isinstance(stmt, ast.ImportFrom):
            target = _absolute(stmt.module, stmt.level, source.name, is_package)
            if target == package or target.startswith(package + "."):
                return target
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.name == package or alias.name.startswith(package + "."):
                    return alias.name
        return None

    visit_body(tree.body, False)
    return found


def collect(root: Path, package: str, module: str, constants: Mapping[str, Mapping[str, str]] | None = None,
            reexports: Mapping[str, str] | None = None) -> list[tuple[ModuleSource, list[InternalImport]]]:
    """The kernel module and every library module it needs, dependencies first (depth-first post-order;
    an import cycle pastes each module once, where it is first finished). Modules named in ``constants``
    are not pasted: the names imported from them become the given constants (see :func:`strip_imports`)."""
    constants = constants or {}
    done: dict[str, tuple[ModuleSource, list[InternalImport]]] = {}
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in done or name in visiting:
            return
        visiting.add(name)
        source = read_module(root, package, name)
        is_package = source.relpath.endswith("/__init__.py")
        imports = internal_imports(source, package, is_package, reexports)
        for imp in imports:
            if imp.type_checking_only:
                continue
            if imp.module in constants:
                missing = [n for n, _ in imp.names if n not in constants[imp.module]]
                if missing:
                    raise BuildError(f"{source.relpath}:{imp.lineno}: no constant given for {missing} of "
                                     f"{imp.module}")
                continue
            for imported, _ in imp.names:
                if module_path(root, package, f"{imp.module}.{imported}") is not None and imported != "*":
                    raise BuildError(f"{source.relpath}:{imp.lineno}: `from {imp.module} import {imported}` "
                                     "imports a module object, which cannot be pasted; this module needs another "
                                     "adapter")
            visit(imp.module)
        visiting.discard(name)
        done[name] = (source, imports)

    visit(module)
    return list(done.values())


Line = tuple[str, int | None]  # text, and its 1-based line in the library file (None: inserted by the paste)


def strip_imports(source: ModuleSource, imports: list[InternalImport],
                  constants: Mapping[str, Mapping[str, str]] | None = None) -> tuple[list[Line], list[str]]:
    """``source`` with its internal import statements and ``from __future__`` lines (the paste hoists those)
    removed. An import that renamed a name becomes ``asname = name``; one from a module in ``constants``
    becomes ``name = <constant>`` (a package ``__init__`` that would import the whole library just to give
    ``__version__``, say). Returns the lines with their origin, and a note per removed statement."""
    constants = constants or {}
    lines = source.text.splitlines()
    notes: list[str] = []
    replace: dict[int, list[str]] = {}  # first line index -> replacement lines; others in range dropped
    drop: set[int] = set()
    for imp in imports:
        if any(name == "*" for name, _ in imp.names):
            raise BuildError(f"{source.relpath}:{imp.lineno}: `from {imp.module} import *` cannot be pasted "
                             "name by name; this module needs another adapter")
        first, last = imp.lineno - 1, imp.end_lineno - 1
        indent = " " * imp.col
        if lines[first][: imp.col].strip():
            raise BuildError(f"{source.relpath}:{imp.lineno}: the import shares its line with other code")
        if imp.module in constants:
            new = [f"{indent}{asname or name} = {constants[imp.module][name]}" for name, asname in imp.names]
        else:
            new = [f"{indent}{asname} = {name}" for name, asname in imp.names if asname and asname != name]
        if not new and imp.sole_statement:
            new = [f"{indent}pass"]
        replace[first] = new
        drop.update(range(first + 1, last + 1))
        notes.append(f"{source.relpath}:{imp.lineno}: " + " ".join(x.strip() for x in lines[first:last + 1]))
    for stmt in ast.parse(source.text).body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
            drop.update(range(stmt.lineno - 1, stmt.end_lineno or stmt.lineno))
    out: list[Line] = []
    for index, line in enumerate(lines):
        if index in replace:
            out.extend((text, None) for text in replace[index])
        elif index not in drop:
            out.append((line, index + 1))
    return out, notes


def future_features(text: str) -> list[str]:
    """The ``from __future__`` features a module turns on (they must open the pasted candidate)."""
    return [a.name for stmt in ast.parse(text).body
            if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__" for a in stmt.names]


def _module_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements that run at module level: the body, and the blocks of its if/try/with statements."""
    out: list[ast.stmt] = []
    for stmt in body:
        out.append(stmt)
        if isinstance(stmt, ast.If | ast.Try | ast.With):
            for _, value in ast.iter_fields(stmt):
                for block in _blocks(value):
                    out.extend(_module_level(block))
    return out


def _bound_names(targets: list[ast.expr]) -> list[str]:
    """Names an assignment binds (``a``, ``a, *b``), not those it only reads (``sys.modules[k] = ...``)."""
    names: list[str] = []
    for target in targets:
        if isinstance(target, ast.Name):
            names.append(target.id)
        elif isinstance(target, ast.Tuple | ast.List):
            names.extend(_bound_names(list(target.elts)))
        elif isinstance(target, ast.Starred):
            names.extend(_bound_names([target.value]))
    return names


def top_level_bindings(text: str) -> dict[str, str]:
    """Module-level names a module binds, each with what it binds (an import's source, or the statement's
    text), so that two pasted modules binding one name to different things can be told apart from the same
    ``import torch`` repeated."""
    bound: dict[str, str] = {}
    for stmt in _module_level(ast.parse(text).body):
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                name = a.asname or a.name.split(".")[0]
                bound[name] = f"import {a.name if a.asname else name}"
        elif isinstance(stmt, ast.ImportFrom):
            for a in stmt.names:
                bound[a.asname or a.name] = f"from {'.' * stmt.level}{stmt.module or ''} import {a.name}"
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound[stmt.name] = ast.unparse(stmt)
        elif isinstance(stmt, ast.Assign | ast.AnnAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for name in _bound_names(targets):
                bound[name] = ast.unparse(stmt)
    return bound


def paste(modules: list[tuple[ModuleSource, list[InternalImport]]], adapter: str, header: str,
          constants: Mapping[str, Mapping[str, str]] | None = None) -> Candidate:
    """One candidate module: the library modules in order (internal imports removed), then the adapter."""
    features: list[str] = []
    for source, _ in modules:
        features.extend(f for f in future_features(source.text) if f not in features)
    lines: list[Line] = [(f"# {line}" if line else "#", None) for line in header.splitlines()]
    origins: list[str | None] = [None] * len(lines)
    if features:
        lines.append((f"from __future__ import {', '.join(features)}", None))
        origins.append(None)
    notes: list[str] = []
    seen: dict[str, tuple[str, str]] = {}
    shadowed: list[str] = []
    for source, imports in modules:
        body, removed = strip_imports(source, imports, constants)
        notes.extend(removed)
        for name, what in top_level_bindings("\n".join(text for text, _ in body)).items():
            if name in seen and seen[name][1] != what:
                shadowed.append(f"{name} ({seen[name][0]}, then {source.relpath})")
            seen[name] = (source.relpath, what)
        lines.append((f"# ---- {source.relpath} (verbatim, library-internal imports removed) ----", None))
        origins.append(None)
        for text, lineno in body:
            lines.append((text, lineno))
            origins.append(f"{source.relpath}:{lineno}" if lineno is not None else None)
    lines.append(("# ---- KernelEvo adapter ----", None))
    origins.append(None)
    for text in adapter.splitlines():
        lines.append((text, None))
        origins.append("adapter")
    source_text = "\n".join(text for text, _ in lines) + "\n"
    try:
        ast.parse(source_text)
    except SyntaxError as exc:
        raise BuildError(f"the pasted candidate does not parse at line {exc.lineno}: {exc.msg}") from exc
    return Candidate(source_text, [s.name for s, _ in modules], notes, shadowed, origins)


def adapter_text(path: Path) -> str:
    """The adapter file's code without its module docstring and ruff pragma (they describe the file, not
    the candidate)."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    lines = text.splitlines()
    skip: set[int] = set()
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        skip.update(range(first.lineno - 1, first.end_lineno or first.lineno))
    skip.update(i for i, line in enumerate(lines) if line.startswith("# ruff: noqa"))
    return "\n".join(line for i, line in enumerate(lines) if i not in skip).strip() + "\n"


def build(package: str, module: str, adapter: str, header: str, root: Path | None = None,
          constants: Mapping[str, Mapping[str, str]] | None = None,
          reexports: Mapping[str, str] | None = None) -> Candidate:
    """Paste ``module`` of the installed ``package`` (and the library modules it imports) before ``adapter``."""
    root = root or package_root(package)
    return paste(collect(root, package, module, constants, reexports), adapter, header, constants)
