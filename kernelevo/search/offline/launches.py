"""Feasibility of a generated candidate before it is proposed: its launches, read from its own launcher.

The generated ``ModelNew.forward`` is run on meta tensors of every scored case (shapes, dtypes and
strides without memory) with each ``@triton.jit`` kernel replaced by a recorder, so the grids and launch
parameters checked are exactly those the candidate would launch. A candidate is infeasible when a
launch's grid breaks CUDA's limits (x <= 2**31 - 1, y and z <= 65535), when the launcher itself refuses
a case (rows too wide for ``rowwise-1pass``), or when a tiled matmul's pipelined tiles need more shared
memory than the device gives a block. Such candidates are not proposed: evaluating them only costs time.

Runs in the proposer's process (sandboxed: it already runs the task's code), on generated source only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GRID_LIMITS = (2**31 - 1, 65535, 65535)

# Shared memory a block may use (opt-in maximum), by compute capability: H100/H200 and B200 227 KiB,
# A100 163 KiB, consumer Ampere/Ada/Blackwell 99 KiB, Volta/Turing 96/64 KiB.
SHARED_MEMORY_BY_CAPABILITY = {"7.0": 98304, "7.5": 65536, "8.0": 166912, "8.6": 101376, "8.7": 166912,
                               "8.9": 101376, "9.0": 232448, "10.0": 232448, "12.0": 101376}


@dataclass
class Launch:
    """One recorded launch: the kernel, its grid and its keyword launch parameters."""

    kernel: str
    grid: tuple[int, ...]
    params: dict[str, Any] = field(default_factory=dict)
    element_bytes: int = 4  # of the first tensor argument (a matmul's A operand)


class _Recorder:
    def __init__(self, name: str, launches: list[Launch]):
        self.name, self.launches = name, launches

    def __getitem__(self, grid: Any) -> Any:
        def launch(*args: Any, **kwargs: Any) -> None:
            import torch

            g = grid(kwargs) if callable(grid) else grid
            g = tuple(int(x) for x in (g if isinstance(g, (tuple, list)) else (g,)))
            first = next((a for a in args if isinstance(a, torch.Tensor)), None)
            size = first.element_size() if first is not None else 4
            self.launches.append(Launch(self.name, g, dict(kwargs), size))

        return launch


def record_launches(source: str, init_inputs: list[Any], cases: list[list[Any]]) -> list[list[Launch]]:
    """The launches of the candidate's forward, per case, on the meta device (raises what it raises)."""
    import importlib.util
    import tempfile

    import torch
    from triton.runtime.jit import KernelInterface

    with tempfile.TemporaryDirectory(prefix="kernelevo-launches-") as tmp:  # @triton.jit reads its file
        path = Path(tmp) / "offline_candidate.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location("kernelevo_offline_candidate", path)
        if spec is None or spec.loader is None:
            raise ImportError("cannot load the candidate")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # generated source (this proposer's own), not user text
    namespace = vars(module)
    launches: list[Launch] = []
    for name, value in list(namespace.items()):
        if isinstance(value, KernelInterface):
            namespace[name] = _Recorder(name, launches)
    with torch.device("meta"):
        model = namespace["ModelNew"](*init_inputs)
    out = []
    with torch.no_grad():
        for case in cases:
            launches.clear()
            model(*case)
            out.append(list(launches))
    return out


def grid_problem(launch: Launch) -> str | None:
    """What is wrong with a launch's grid, or None."""
    if not launch.grid or len(launch.grid) > 3:
        return f"{launch.kernel}: a grid of {len(launch.grid)} dimensions"
    for axis, (n, limit) in enumerate(zip(launch.grid, GRID_LIMITS)):
        if n > limit:
            return f"{launch.kernel}: grid {launch.grid} has {n} programs on axis {'xyz'[axis]} (limit {limit})"
    return None


def shared_memory_limit(hardware: dict[str, Any]) -> int | None:
    """Bytes of shared memory one block may use on the device the facts describe (None: unknown, e.g.
    the CPU interpreter). An explicit ``max_shared_memory_per_block`` fact wins over the capability table."""
    if hardware.get("device") != "cuda":
        return None
    explicit = hardware.get("max_shared_memory_per_block")
    if isinstance(explicit, int) and explicit > 0:
        return explicit
    return SHARED_MEMORY_BY_CAPABILITY.get(str(hardware.get("capability", "")))


def shared_memory_estimate(launch: Launch) -> int:
    """Bytes of shared memory a launch needs, as Triton allocates it for the strategies written here:
    a tiled matmul keeps ``num_stages`` copies of its A and B tiles (128 x 256 x 128 fp16 tiles in 3
    stages: 294,912 bytes, more than an H200's 232,448); the row kernels need only a small
    scratch for cross-warp reductions (counted as a float per warp and row)."""
    p = launch.params
    if {"BLOCK_M", "BLOCK_N", "BLOCK_K"} <= set(p):
        stages = max(1, int(p.get("num_stages", 3)))
        return (int(p["BLOCK_M"]) + int(p["BLOCK_N"])) * int(p["BLOCK_K"]) * launch.element_bytes * stages
    rows = int(p.get("BLOCK_ROWS", 1))
    return rows * int(p.get("num_warps", 4)) * 4


def infeasible(source: str, init_inputs: list[Any], cases: list[list[Any]],
               hardware: dict[str, Any]) -> str | None:
    """Why the candidate cannot run some scored case, or None when it can (or when its launches cannot
    be read on the meta device: then the verifier decides)."""
    if not cases:
        return None
    try:
        per_case = record_launches(source, init_inputs, cases)
    except ValueError as exc:  # the launcher's own refusal (e.g. rows too wide for one tile)
        return f"the launcher refuses a scored case: {exc}"
    except Exception:  # noqa: BLE001 - meta execution is best effort; the verifier has the last word
        return None
    limit = shared_memory_limit(hardware)
    for case, launches in enumerate(per_case):
        for launch in launches:
            problem = grid_problem(launch)
            if problem is not None:
                return f"case {case}: {problem}"
            if limit is not None and (need := shared_memory_estimate(launch)) > limit:
                return (f"case {case}: {launch.kernel} needs about {need} bytes of shared memory, the device "
                        f"allows {limit} per block")
    return None


def max_programs(launches: list[Launch]) -> int:
    """The largest number of programs of any launch (for tests and reports)."""
    return max((math.prod(launch.grid) for launch in launches), default=0)
