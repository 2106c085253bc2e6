"""Accepted kernels in a user's repository: ``kernels/<op-name>/``. The one module that reads and
writes that layout.

Each directory holds ``kernel.py`` (a candidate module: ``class ModelNew`` with the op's forward
signature), ``manifest.json`` (op id, source hash, the envelope that was verified, results summary,
versions) and ``test_<op-name>.py`` (a generated pytest that re-runs the verifier on it).

The envelope says where the kernel was verified and so where dispatch may use it::

    {"device_type": "cuda", "capabilities": [[9, 0]],          # null: any capability
     "backend": "triton", "versions": {"torch": "...", "triton": "..."},
     "args": [{"kind": "tensor", "dtypes": ["bfloat16"], "rank": 2,
               "dims": [{"min": 8, "max": 16384}, {"min": 4096, "max": 4096}]},
              {"kind": "value", "type": "float", "values": [1e-06]},
              {"kind": "value", "type": "int", "values": [1]}], # every non-tensor: the values verified
     "init": [{"kind": "value", "type": "float", "values": [1e-05]}]}   # a module's constructor arguments

A tensor entry with ``"contiguous": true`` admits only contiguous tensors (every checked input was). Manifests
written before layouts and constructor arguments were recorded have neither key and admit any.

An entry without ``values`` (manifests written before floats were pinned) admits any value of its type.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelevo import pyast
from kernelevo.op import split_op_id

if TYPE_CHECKING:
    from evaluator.verdict import Verdict

KERNELS_DIR = "kernels"
MANIFEST = "manifest.json"
KERNEL_MODULE = "kernel.py"
FORMAT_VERSION = 1
# Op ids the bot accepts from a repository: path components of letters, digits, '_', '.', '-' (none starting
# with '.'), and a dotted Python qualname. Anything else (quotes, backticks, newlines, '<', '@'...) could
# change the syntax of a file, branch name or Markdown built from it, so such ops are not offered at all.
SAFE_OP_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}(/[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}){0,15}"
                        r"(::[A-Za-z_][A-Za-z0-9_]{0,99}(\.[A-Za-z_][A-Za-z0-9_]{0,99}){0,7})?")


class KernelStoreError(ValueError):
    """A kernel directory that cannot be read (missing file, bad manifest): names the file and fix."""


@dataclass(frozen=True)
class StoredKernel:
    """One accepted kernel as found on disk."""

    directory: Path
    name: str
    op_id: str
    source_hash: str
    kind: str
    envelope: dict
    results: dict
    manifest: dict

    @property
    def kernel_path(self) -> Path:
        return self.directory / KERNEL_MODULE

    @property
    def test_path(self) -> Path:
        return self.directory / f"test_{self.name}.py"

    @property
    def repo_root(self) -> Path:
        return self.directory.parent.parent


def kernel_module_name(name: str, source: str) -> str:
    """The private module name a stored kernel's ``kernel.py`` is imported under, from the op's name and the file's
    text (the dispatcher's name; the verifier imports candidates under the same name). Named by the text, not the
    path: the path of a user's checkout differs from the verifier's sandbox, so a name made from it would tell a
    kernel (reading its own functions' ``__module__``) where it runs; two kernels with one text are one module."""
    import hashlib

    return f"_kernelevo_kernel_{name}_{hashlib.sha256(source.encode()).hexdigest()[:8]}"


def is_safe_op_id(op_id: str) -> bool:
    """Whether ``op_id`` matches :data:`SAFE_OP_ID` (see there for why)."""
    return bool(SAFE_OP_ID.fullmatch(op_id)) and len(op_id) <= 400


def op_name(op_id: str) -> str:
    """Directory name for an op: its qualname as a Python identifier (``Attention.forward`` ->
    ``attention_forward``); task files use the file stem instead of ``Model``."""
    path, qualname = split_op_id(op_id)
    base = Path(path).stem if qualname == "Model" else qualname.replace(".<locals>.", "_")
    return re.sub(r"[^0-9a-zA-Z]+", "_", base).strip("_").lower() or "op"


def _long_name(op_id: str) -> str:
    path, qualname = split_op_id(op_id)
    return re.sub(r"[^0-9a-zA-Z]+", "_", f"{path.removesuffix('.py')}__{qualname}").strip("_").lower()


def manifest_op_id(manifest: Path) -> str | None:
    """The op a kernel folder's manifest names; None when it cannot be read as a manifest."""
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    owner = data.get("op_id") if isinstance(data, dict) else None
    return owner if isinstance(owner, str) else None


def kernel_dir_for(repo_root: Path, op_id: str, *, on: str = "") -> Path:
    """Where the kernel of ``op_id`` lives (or will): the short name unless another op's manifest holds it.
    A name taken by anything without a kernel manifest (a folder of files kernelevo did not write, a file, a
    link) is nobody's to overwrite: :class:`KernelStoreError`, naming it relative to the repository (and
    ``on``, the branch it was found on, when given)."""
    where = f" on {on}" if on else ""
    kernels = Path(repo_root) / KERNELS_DIR
    for name in (op_name(op_id), _long_name(op_id)):
        directory = kernels / name
        manifest = directory / MANIFEST
        if not directory.exists() and not directory.is_symlink():
            return directory
        if directory.is_symlink() or not directory.is_dir() or manifest.is_symlink() or not manifest.is_file():
            raise KernelStoreError(f"{KERNELS_DIR}/{name}/{where} holds no kernel manifest (files kernelevo did"
                                   f" not write), not {op_id}'s: nothing is written over it (rename the op, or"
                                   " move that folder)")
        if manifest_op_id(manifest) in (op_id, None):  # ours, or unreadable: overwrite it
            return directory
    raise KernelStoreError(f"{KERNELS_DIR}/{where}: both {op_name(op_id)!r} and {_long_name(op_id)!r} hold other"
                           " ops")


def results_summary(verdict: Verdict | Mapping[str, Any]) -> dict:
    """The part of a verdict worth keeping next to the kernel (the full verdict is in the report), as the
    manifest's JSON. A verdict held as JSON (a job record) is validated first."""
    from evaluator.verdict import Verdict  # lazy: dispatch reads manifests in users' programs and needs none of it

    v = Verdict.coerce(verdict)
    if v is None:
        raise ValueError("results_summary: no verdict was given (a stored kernel needs the verdict that accepted it)")
    cases = v.correctness.cases if v.correctness else []
    timing = v.timing
    return {
        "verdict": v.verdict,
        "reason": v.reason.value,
        "detail": v.detail,
        "device": v.device,
        "backend": v.backend,
        "cases_checked": len(cases),
        "checks_per_case": max((len(c.checks) for c in cases), default=0),
        "geomean_speedup_vs_eager": timing.geomean_speedup_vs_eager if timing else None,
        "geomean_speedup_vs_compile": timing.geomean_speedup_vs_compile if timing else None,
        "geomean_speedup_vs_best": timing.geomean_speedup_vs_best if timing else None,
        "environment": v.environment.recorded(),
    }


def envelope_from_cases(cases: list[tuple], *, device_type: str, capabilities: list | None,
                        backend: str, versions: dict | None = None, init: list | None = None) -> dict:
    """The tightest envelope covering the verified cases: per argument, the dtypes and rank seen, the range of each
    dimension (for display) and, when every checked tensor was contiguous, that layout; every other argument (int,
    bool, str, float) must be one of the values seen. ``shapes``: the tensor arguments' shapes of each verified case
    together (None for a value): a call must match one of them exactly, since a kernel checked at 97 and 1025 columns
    says nothing of 512 (a block-size table keyed by the checked lengths would be wrong there). Floats too: a kernel
    verified at ``temperature=0.7`` may hard-code it, so 0.5 runs the original code. ``init``: the constructor
    arguments ``ModelNew`` was built and checked with, pinned the same way (a module built with another ``eps`` runs
    the original)."""
    if not cases:
        raise ValueError("envelope_from_cases: no cases")
    arity = {len(c) for c in cases}
    if len(arity) != 1:
        raise ValueError(f"envelope_from_cases: cases have different numbers of arguments {sorted(arity)}")
    envelope = {"device_type": device_type, "capabilities": capabilities, "backend": backend,
                "versions": versions or {}, "args": _argument_specs(cases, arity.pop()), "shapes": _shapes(cases)}
    if init is not None:
        envelope["init"] = _argument_specs([tuple(init)], len(init))
    return envelope


def _argument_specs(cases: list[tuple], arity: int) -> list[dict[str, Any]]:
    args: list[dict[str, Any]] = []
    for i in range(arity):
        column = [c[i] for c in cases]
        if all(hasattr(x, "dtype") and hasattr(x, "shape") for x in column):
            ranks = {len(x.shape) for x in column}
            if len(ranks) != 1:
                raise ValueError(f"envelope_from_cases: argument {i} has ranks {sorted(ranks)}; split the op")
            rank = ranks.pop()
            dims = [{"min": min(int(x.shape[d]) for x in column), "max": max(int(x.shape[d]) for x in column)}
                    for d in range(rank)]
            dtypes = sorted({str(x.dtype).removeprefix("torch.") for x in column})
            spec: dict[str, Any] = {"kind": "tensor", "dtypes": dtypes, "rank": rank, "dims": dims}
            if all(_contiguous(x) is True for x in column):
                spec["contiguous"] = True  # every checked input was: another layout runs the original
            args.append(spec)
        else:
            types = {type(x).__name__ for x in column}
            if len(types) != 1:
                raise ValueError(f"envelope_from_cases: argument {i} mixes types {sorted(types)}")
            type_name = types.pop()
            seen = set(column)
            values = sorted(seen) if type_name == "float" else sorted(seen, key=repr)
            args.append({"kind": "value", "type": type_name, "values": values})
    return args


def _shapes(cases: list[tuple]) -> list[list[list[int] | None]]:
    """Each case's tensor shapes, in argument order (None for other arguments), once each, sorted."""
    seen = {tuple(tuple(int(n) for n in x.shape) if hasattr(x, "shape") and hasattr(x, "dtype") else None
                  for x in case) for case in cases}
    return [[list(shape) if shape is not None else None for shape in case]
            for case in sorted(seen, key=lambda c: [list(s) if s is not None else [] for s in c])]


def _contiguous(x: Any) -> bool | None:
    """Whether a checked tensor (or its recorded spec) was contiguous; None when that was not recorded."""
    test = getattr(x, "is_contiguous", None)
    return test() if callable(test) else None


def write_kernel(repo_root: Path | str, op, candidate_source: str, verdict: Verdict | Mapping[str, Any],
                 envelope: dict) -> Path:
    """Store an accepted kernel for ``op`` (anything with ``op_id``, ``source_hash``, ``kind``, e.g. a
    :class:`kernelevo.discovery.DiscoveredOp`); returns its directory. Overwrites the previous kernel
    of the same op."""
    from kernelevo import __version__

    directory = kernel_dir_for(Path(repo_root), op.op_id)
    directory.mkdir(parents=True, exist_ok=True)
    name = directory.name
    manifest = {
        "format": FORMAT_VERSION,
        "op_id": op.op_id,
        "source_hash": op.source_hash,
        "kind": op.kind,
        "envelope": envelope,
        "results": results_summary(verdict),
        "kernelevo_version": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    (directory / KERNEL_MODULE).write_text(candidate_source, encoding="utf-8")
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (directory / f"test_{name}.py").write_text(_generated_test(name, op.op_id), encoding="utf-8")
    return directory


_TEST_TEMPLATE = '''
"""DOCSTRING"""

from pathlib import Path

KERNEL_DIR = Path(__file__).resolve().parent


def test_NAME_is_verified():
    from kernelevo.commands.verify_cmd import verify_kernel
    from kernelevo.kernel_store import read_kernel

    result = verify_kernel(read_kernel(KERNEL_DIR))
    assert result.ok, result.message
'''


def _generated_test(name: str, op_id: str) -> str:
    """The generated pytest, built as a syntax tree: the op id (a file path a PR author chose) is only ever a
    string constant, and the directory name must be a plain identifier, so no input can change the code."""
    if not re.fullmatch(r"[a-z0-9_]{1,120}", name):
        raise KernelStoreError(f"kernels/{name!r}: a kernel directory name must be lowercase letters, digits and"
                               " '_' (it names the generated test function)")
    doc = (f"Generated by KernelEvo: re-checks kernels/{name}/kernel.py against {op_id}.\n\n"
           "Fails when the op's source changed since the kernel was verified (stale) or when the verifier\n"
           f"rejects the kernel. Run: pytest kernels/{name}   (or: kernelevo verify)\n")
    tree = pyast.parse(_TEST_TEMPLATE)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value == "DOCSTRING":
            node.value = doc
        elif isinstance(node, ast.FunctionDef) and node.name == "test_NAME_is_verified":
            node.name = f"test_{name}_is_verified"
    return ast.unparse(tree) + "\n"


def read_kernel(directory: Path | str) -> StoredKernel:
    """Read one ``kernels/<op-name>/`` directory; raises :class:`KernelStoreError` naming the problem."""
    directory = Path(directory)
    manifest_path = directory / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KernelStoreError(f"{manifest_path}: missing; every kernels/<op>/ directory needs one") from None
    except ValueError as exc:
        raise KernelStoreError(f"{manifest_path}: not valid JSON ({exc})") from None
    missing = [k for k in ("op_id", "source_hash", "envelope") if k not in manifest]
    if missing:
        raise KernelStoreError(f"{manifest_path}: missing keys {missing}")
    if not (directory / KERNEL_MODULE).is_file():
        raise KernelStoreError(f"{directory / KERNEL_MODULE}: missing (the manifest has no kernel)")
    return StoredKernel(directory=directory, name=directory.name, op_id=manifest["op_id"],
                        source_hash=manifest["source_hash"], kind=manifest.get("kind", "function"),
                        envelope=manifest["envelope"], results=manifest.get("results", {}), manifest=manifest)


def find_kernels(repo_root: Path | str) -> list[StoredKernel]:
    """Every readable kernel under ``<repo_root>/kernels`` (sorted by name); see
    :func:`find_kernels_with_errors` for the unreadable ones."""
    return find_kernels_with_errors(repo_root)[0]


def find_kernels_with_errors(repo_root: Path | str) -> tuple[list[StoredKernel], list[KernelStoreError]]:
    """Kernels under ``<repo_root>/kernels`` and the directories that could not be read."""
    kernels, errors = [], []
    base = Path(repo_root) / KERNELS_DIR
    if not base.is_dir():
        return [], []
    for directory in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        try:
            kernels.append(read_kernel(directory))
        except KernelStoreError as exc:
            errors.append(exc)
    return kernels, errors
