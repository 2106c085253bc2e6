"""``optimize --write-kernel``: install a run's accepted kernel into ``kernels/<op>/`` without losing a better one.

The decision is a pure function (:func:`decide`) over what is stored and what the run found: an existing kernel
that is better (a measured speedup above this run's) or newer (written after this run started, e.g. by a
concurrent run) is kept unless ``--force``. The write is atomic: the directory is built complete under
``kernels/.staging-*`` (a name dispatch and ``kernelevo verify`` skip) by :func:`kernelevo.kernel_store.write_kernel`
and renamed into place, all under an exclusive ``flock`` of the ``kernels/`` directory, so two runs never
interleave their files and the second one decides against what the first one wrote.
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from evaluator.verdict import Verdict
from kernelevo.kernel_store import KERNELS_DIR, MANIFEST, kernel_dir_for, op_name, write_kernel
from kernelevo.search.targets import Target, TargetError, envelope_from_verdict


class Action(enum.Enum):
    WRITE = "write"  # nothing stored for the op
    REPLACE = "replace"  # the stored kernel is older and not better (or --force)
    KEEP = "keep"  # the stored kernel is better or newer: refused without --force


@dataclass(frozen=True)
class StoredFacts:
    """What matters about the kernel already in the op's directory (``readable`` False: not a kernel)."""

    readable: bool
    source_hash: str | None = None
    created: datetime | None = None
    speedup: float | None = None  # geomean vs eager; None when not timed (a CPU run)
    device: str | None = None


@dataclass(frozen=True)
class NewFacts:
    """What this run found: the op's source hash, its speedup (None on a CPU) and when the run started."""

    source_hash: str
    speedup: float | None
    started: datetime


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: str


def decide(stored: StoredFacts | None, new: NewFacts, force: bool) -> Decision:
    """Whether to write this run's kernel over what is stored (pure)."""
    if stored is None:
        return Decision(Action.WRITE, "no kernel was stored for this op")
    if force:
        return Decision(Action.REPLACE, "--force")
    if not stored.readable:
        return Decision(Action.KEEP, "a directory that is not a readable kernel (no valid manifest.json)")
    if stored.created is not None and stored.created >= new.started:
        return Decision(Action.KEEP, f"a newer kernel (written {stored.created.isoformat()}, after this run "
                                     f"started at {new.started.isoformat()}: another run?)")
    if stored.source_hash != new.source_hash:
        return Decision(Action.REPLACE, "the stored kernel was verified against an older version of the op")
    if stored.speedup is not None and (new.speedup is None or stored.speedup > new.speedup):
        found = "not timed (a CPU run)" if new.speedup is None else f"{new.speedup:.2f}x"
        return Decision(Action.KEEP, f"a better kernel ({stored.speedup:.2f}x vs eager on {stored.device or '?'};"
                                     f" this run's: {found})")
    return Decision(Action.REPLACE, "the stored kernel is older and not better")


@dataclass(frozen=True)
class Installed:
    """The outcome, with the lines the CLI prints."""

    directory: Path
    decision: Decision
    device: str

    @property
    def written(self) -> bool:
        return self.decision.action is not Action.KEEP

    def lines(self, run_dir: str | None = None) -> list[str]:
        if not self.written:
            again = f"kernelevo optimize --resume {run_dir} --write-kernel --force" if run_dir else "--force"
            return [f"Not written: {self.directory} already holds {self.decision.reason}. "
                    f"Keep it, or replace it with: {again}"]
        verb = "Wrote" if self.decision.action is Action.WRITE else f"Replaced ({self.decision.reason})"
        if self.device == "cpu":
            runs = ("the op runs this kernel on the CPU in processes that run Triton interpreted (TRITON_INTERPRET=1),"
                    " where it was verified, and its original code everywhere else; a search with --device cuda on"
                    " a GPU finds one for GPUs.")
        else:
            runs = (f"the op runs this kernel where it was verified ({self.device}), and its original code "
                    "everywhere else.")
        return [f"{verb} {self.directory}: {runs}",
                f"Commit {self.directory.name}/ with your code; check it in CI with: kernelevo verify"]


def _parse_time(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value)) if value else None
    except ValueError:
        return None


def stored_facts(directory: Path) -> StoredFacts | None:
    """What is stored in ``directory`` (None when nothing is)."""
    if not directory.exists():
        return None
    try:
        manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
        results = manifest.get("results") or {}
        speedup = results.get("geomean_speedup_vs_eager")
        return StoredFacts(True, manifest.get("source_hash"), _parse_time(manifest.get("created")),
                           float(speedup) if speedup is not None else None, results.get("device"))
    except (OSError, ValueError, TypeError, AttributeError):
        return StoredFacts(False)


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """An exclusive advisory lock on a directory (its own fd: nothing is left behind in the user's tree)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def install_accepted_kernel(target: Target, source: str, verdict: Verdict | Mapping[str, Any], device: str, *,
                            run_started: str, force: bool = False) -> Installed:
    """Install an accepted kernel for ``target`` unless a better or newer one is stored (see :func:`decide`)."""
    v = Verdict.coerce(verdict)
    if v is None or not v.accepted:
        raise TargetError(f"{target.op_id}: refusing to store a kernel the verifier did not accept")
    started = _parse_time(run_started)
    if started is None:
        raise ValueError(f"install_accepted_kernel: run_started {run_started!r} is not an ISO time")
    envelope = envelope_from_verdict(v, device)
    speedup = v.timing.geomean_speedup_vs_eager if v.timing else None
    new = NewFacts(target.op.source_hash, speedup, started)
    kernels = target.repo_root / KERNELS_DIR
    kernels.mkdir(parents=True, exist_ok=True)
    with _locked(kernels):
        final = kernel_dir_for(target.repo_root, target.op_id)
        decision = decide(stored_facts(final), new, force)
        if decision.action is Action.KEEP:
            return Installed(final, decision, device)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=kernels))
        try:
            built = _build(staging, target, final.name, source, v, envelope)
            _swap_in(built, final, staging)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return Installed(final, decision, device)


def _build(staging: Path, target: Target, name: str, source: str, verdict: Verdict, envelope: dict) -> Path:
    """The complete kernel directory, built under ``staging`` with the name it will have."""
    short = op_name(target.op_id)
    if name != short:  # the short name belongs to another op in the repository: make the store pick the long one
        held = staging / KERNELS_DIR / short
        held.mkdir(parents=True)
        (held / MANIFEST).write_text(json.dumps({"op_id": ""}), encoding="utf-8")
    built = write_kernel(staging, target.op, source, verdict, envelope)
    if built.name != name:
        raise RuntimeError(f"kernel store named the staged kernel {built.name!r}, expected {name!r}")
    return built


def _swap_in(built: Path, final: Path, staging: Path) -> None:
    """Rename ``built`` to ``final``; a previous ``final`` is moved aside first and put back on failure."""
    old = staging / "previous"
    had_old = final.exists()
    if had_old:
        os.rename(final, old)
    try:
        os.rename(built, final)
    except OSError:
        if had_old:
            os.rename(old, final)
        raise
