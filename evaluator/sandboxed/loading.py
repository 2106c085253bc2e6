"""Loading what the parent hands a sandboxed candidate process: its files (inputs, the reference's state) and
``ModelNew`` built and given the reference's weights as KernelEvo's dispatcher gives them.

Shared by the guarded candidate process (:mod:`evaluator.sandboxed.candidate`) and the plain one
(:mod:`evaluator.sandboxed.plain`); it imports torch and the standard library only, so the plain process loads
nothing a user's program would not.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path
from typing import Any

import torch

from evaluator.sandboxed.taskspec import TaskError


def load_fd(fd: int) -> Any:
    """A file the parent opened for us, loaded safely (no code); the request loop closes the descriptor.

    Mapped rather than read where the process can name its own descriptor (``/proc/self/fd``): the timing sets
    alone are about a gigabyte for a large case, copied once more for nothing when read. The mapping is private
    (copy on write: whatever a kernel writes into a host tensor stays in this process)."""
    try:
        return torch.load(f"/proc/self/fd/{fd}", weights_only=True, map_location="cpu", mmap=True)
    except Exception:  # noqa: BLE001 - no /proc, a torch without mmap loading: read it instead
        pass
    try:
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return torch.load(handle, weights_only=True, map_location="cpu")
    except Exception as exc:
        raise TaskError(f"the verifier could not read its own input file ({type(exc).__name__}: {exc})"
                                 ) from exc


def seed_construction(seed: int, high: int | None = None) -> None:
    """Seed the CPU generator for ModelNew's construction as the reference seeded its Model (draws made there match)
    while it reads as a program's that never seeded: ``torch.initial_seed()`` a 64-bit value (torch seeds from
    /dev/urandom) and the CUDA generators at their defaults. ``torch.manual_seed(seed)`` showed the parent's
    31-bit draw, a value no unseeded program has: a constructor could latch on it (``redteam/s7_initial_seed_tell``).
    The stream depends only on the seed's low 32 bits, so a random high half changes nothing drawn and keeps the
    value consistent with the generator's state; ``high`` (random when None) is for tests."""
    upper = secrets.randbits(32) if high is None else high & 0xFFFFFFFF
    upper = upper or 1  # never below 2**32 (a value a program that seeds with a small number shows)
    torch.default_generator.manual_seed((upper << 32) | (seed & 0xFFFFFFFF))


def hand_over_state(model: torch.nn.Module, tables: dict[str, Any]) -> None:
    """Give ``ModelNew`` the reference's weights the way KernelEvo's dispatcher gives it a user's module's
    (``kernelevo.dispatch._share_state``): for each module path both have, a parameter (buffer) table whose names
    are exactly the reference's is filled with the reference's entries, as other tensor objects in their dtypes; any
    other table keeps the constructor's values, as it does under the dispatcher. ``tables``: the reference
    process's ``module_tables``. Copied in place by state-dict name, as before, a view or copy taken in ``__init__``
    showed the reference's weights here and the constructor's values in a user's program
    (``redteam/s7_weight_alias_rmsnorm``), and so did a table with a name the user's module lacks
    (``redteam/s7_extra_parameter_rmsnorm``)."""
    made: dict[int, torch.Tensor] = {}  # id of a loaded tensor (alive in ``tables``) -> its own parameter or copy
    for path, module in model.named_modules():
        reference = tables.get(path)
        if not isinstance(reference, dict):
            continue
        for table_name in ("_parameters", "_buffers"):
            table, given = vars(module).get(table_name), reference.get(table_name)
            if not isinstance(table, dict) or not isinstance(given, dict) or set(table) != set(given):
                continue
            for name, entry in given.items():
                if entry is None:
                    table[name] = None
                    continue
                tensor, requires_grad = (entry[0], bool(entry[1])) if table_name == "_parameters" else (entry, False)
                if id(tensor) not in made:
                    made[id(tensor)] = torch.nn.Parameter(tensor.clone(), requires_grad=requires_grad) \
                        if table_name == "_parameters" else tensor.clone()
                table[name] = made[id(tensor)]


def enter_repository(folder: Path) -> None:
    """Put the user's repository folder first on the import path, as a program started there has it (``python
    train.py`` from the repository): a kernel asking for its own package (``find_spec("kernels")``) finds it in the
    plain process as in a user's program. Not in the guarded process, whose audit hook would refuse the listings
    ``importlib.metadata`` then makes of the folder on the candidate's behalf; a kernel that behaves well only where
    the package is missing fails the plain run."""
    entry = str(folder)
    if entry not in sys.path:
        sys.path.insert(0, entry)
