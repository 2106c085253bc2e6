"""Task files (extended KernelBench format) and the inputs the verifier feeds them.

A task module defines ``class Model(nn.Module)`` (the reference), ``get_inputs()`` and
``get_init_inputs()``. Optional extensions: ``get_cases()`` (several scored input lists),
``get_small_cases()`` (sizes the Triton CPU interpreter can run), ``TOLERANCE``, ``ALLOW_TORCH_OPS``,
``hbm_bytes(*inputs)``, ``flops(*inputs)``, ``NONDETERMINISTIC_OK``, ``INPUT_DISTRIBUTIONS`` and ``KEEP_INPUTS``.

Inputs are produced on the CPU under ``torch.manual_seed(seed)`` so that the reference process and the
candidate process build bit-identical inputs independently, then moved to the device.
This module runs only inside worker processes (it imports user code).
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import math
import random
import sys
import traceback
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from evaluator.sandboxed import sentinels

# Each correctness seed draws the task's inputs and then reshapes the floating-point ones (see
# apply_distribution); the parameters of each reshaping come from the seed, which no candidate ever sees.
DEFAULT_DISTRIBUTIONS = ("task", "signed", "scaled", "shifted", "wide")
# integer inputs hold a sentinel value the op means something by (sentinels.py) under every distribution but the task's
# own: also under those whose floats look like the task's draw (`signed` of a randn), so that a kernel cannot handle
# the sentinel only where the other inputs look unusual
MARKED_DISTRIBUTIONS = ("signed", "scaled", "shifted", "wide", "uniform", "small")
DISTRIBUTIONS = frozenset({*DEFAULT_DISTRIBUTIONS, "uniform", "small"})
GUARD_ELEMENTS = 4096  # sentinel-filled elements before and after every input (catches out-of-bounds access)


class TaskError(Exception):
    """The task file is unusable; the message names the file, the line and what to fix."""


class CandidateLoadError(Exception):
    """The candidate module could not be imported or instantiated (a compile_error verdict)."""


@dataclass
class LoadedTask:
    """A task module plus its validated hooks."""

    path: Path
    module: ModuleType
    tolerance: dict[str, float] = field(default_factory=dict)
    allow_ops: tuple[str, ...] = ()
    nondeterministic_ok: bool = False
    distributions: tuple[str, ...] = DEFAULT_DISTRIBUTIONS
    keep_inputs: frozenset[int] = frozenset()  # forward arguments that keep the task's own draw (KEEP_INPUTS)

    @property
    def model_cls(self) -> type[torch.nn.Module]:
        return self.module.Model  # checked to be an nn.Module subclass when the task was loaded

    def init_inputs(self) -> list[Any]:
        return list(_call_hook(self, "get_init_inputs"))

    def raw_cases(self, small: bool) -> list[list[Any]]:
        """Every input list of the chosen size class, drawn from the current RNG state."""
        mod = self.module
        if small and hasattr(mod, "get_small_cases"):
            cases = _call_hook(self, "get_small_cases")
        elif hasattr(mod, "get_cases"):
            cases = _call_hook(self, "get_cases")
        else:
            cases = [_call_hook(self, "get_inputs")]
        cases = [list(c) if isinstance(c, (list, tuple)) else [c] for c in cases]
        if not cases:
            raise TaskError(f"{self.path}: the task declares no input cases (get_cases() returned nothing)")
        for i, case in enumerate(cases):
            for j, value in enumerate(case):
                if isinstance(value, torch.Tensor) and value.device.type != "cpu":
                    raise TaskError(
                        f"{self.path}: case {i} input {j} is on {value.device}; input functions must return CPU "
                        "tensors (the verifier moves them to the device under test)"
                    )
        return cases


def _call_hook(task: LoadedTask, name: str) -> Any:
    try:
        return getattr(task.module, name)()
    except Exception as exc:  # the task's own code failed: name the file and line
        raise TaskError(f"{task.path}: {name}() raised {type(exc).__name__}: {exc}{_where(exc, task.path)}") from exc


def _where(exc: BaseException, path: Path) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).resolve() == path.resolve()]
    return f" (line {frames[-1].lineno})" if frames else ""


def import_file(path: Path, module_prefix: str, name: str | None = None) -> ModuleType:
    """Import a Python file under a private module name (not importable by name from other code): ``name``, or
    one made of ``module_prefix`` and the path's hash."""
    if name is None:
        name = f"_kernelevo_{module_prefix}_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # triton.jit needs the module registered to find kernel sources
    spec.loader.exec_module(module)
    return module


def load_task(path: str | Path) -> LoadedTask:
    """Import and validate a task file, raising :class:`TaskError` with an actionable message."""
    path = Path(path).resolve()
    if not path.is_file():
        raise TaskError(f"{path}: task file not found")
    try:
        module = import_file(path, "task")
    except SyntaxError as exc:
        raise TaskError(f"{path}:{exc.lineno}: syntax error in the task file: {exc.msg}") from exc
    except Exception as exc:
        raise TaskError(
            f"{path}: the task file raised {type(exc).__name__} on import: {exc}{_where(exc, path)}") from exc
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if not hasattr(module, n)]
    if missing:
        raise TaskError(
            f"{path}: not a KernelBench-format task: missing {', '.join(missing)} "
            "(a task defines class Model(nn.Module), get_inputs() and get_init_inputs())"
        )
    if not (isinstance(module.Model, type) and issubclass(module.Model, torch.nn.Module)):
        raise TaskError(f"{path}: Model must be a torch.nn.Module subclass")
    tolerance = dict(getattr(module, "TOLERANCE", {}) or {})
    unknown = set(tolerance) - {"atol", "rtol", "rel"}
    if unknown:
        raise TaskError(f"{path}: TOLERANCE has unknown keys {sorted(unknown)}; use atol, rtol and rel")
    return LoadedTask(
        path=path,
        module=module,
        tolerance=_tolerance(path, tolerance),
        allow_ops=tuple(getattr(module, "ALLOW_TORCH_OPS", ()) or ()),
        nondeterministic_ok=bool(getattr(module, "NONDETERMINISTIC_OK", False)),
        distributions=_distributions(path, getattr(module, "INPUT_DISTRIBUTIONS", DEFAULT_DISTRIBUTIONS)),
        keep_inputs=_keep_inputs(path, module.Model, getattr(module, "KEEP_INPUTS", ())),
    )


def _tolerance(path: Path, declared: dict[Any, Any]) -> dict[str, float]:
    """``TOLERANCE``'s values as floats: each a finite number >= 0 (an infinite bound would switch the check off)."""
    out: dict[str, float] = {}
    for key, value in declared.items():
        number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        if number is None or not math.isfinite(number) or number < 0:
            raise TaskError(f"{path}: TOLERANCE[{key!r}] = {value!r}: each bound must be a finite number >= 0 "
                            "(e.g. TOLERANCE = {\"atol\": 1e-2, \"rtol\": 1e-2})")
        out[str(key)] = number
    return out


def _keep_inputs(path: Path, model_cls: type[torch.nn.Module], declared: Any) -> frozenset[int]:
    """``KEEP_INPUTS``: forward arguments (names or positions) whose values have a structure the op relies on and
    the input distributions would break (rotary tables built as ``cat(freqs, freqs)``, probabilities that sum to
    one, a sorted index): they keep the task's own draw under every distribution, while the other inputs still
    cover the op's domain."""
    if not declared:
        return frozenset()
    if isinstance(declared, (str, int)):
        declared = (declared,)
    names = forward_parameter_names(model_cls)
    kept: set[int] = set()
    for item in declared:
        if isinstance(item, bool) or not isinstance(item, (str, int)):
            raise TaskError(f"{path}: KEEP_INPUTS entries are forward argument names or positions, got {item!r}")
        if isinstance(item, int):
            if item < 0:
                raise TaskError(f"{path}: KEEP_INPUTS position {item} is negative; positions count from 0")
            kept.add(item)
        elif item in names:
            kept.add(names.index(item))
        else:
            raise TaskError(f"{path}: KEEP_INPUTS names {item!r}, which is not an argument of Model.forward "
                            f"({', '.join(names) or 'none'})")
    return frozenset(kept)


def _distributions(path: Path, declared: Any) -> tuple[str, ...]:
    names = tuple(str(d) for d in (declared or ()))
    unknown = sorted(set(names) - DISTRIBUTIONS)
    if not names or unknown:
        raise TaskError(f"{path}: INPUT_DISTRIBUTIONS {list(names)} has unknown or no entries {unknown}; use some of "
                        f"{sorted(DISTRIBUTIONS)} (the task's own draw is 'task')")
    return names


def distribution_for(task: LoadedTask, seed_index: int) -> str:
    """Which input distribution seed number ``seed_index`` uses (cycling through the task's list)."""
    return task.distributions[seed_index % len(task.distributions)]


def apply_distribution(value: Any, distribution: str, seed: int) -> Any:
    """Reshape the values of a floating-point input so that the cases cover the op's domain, not just what
    ``get_inputs`` happens to draw (``torch.rand`` never gives a negative value; ``randn`` rarely a large one):

    - ``signed``: random signs (a skipped ReLU, an ``abs`` assumed away);
    - ``scaled``: magnitudes times a secret factor in [4, 64] (softmax without the max subtraction overflows);
    - ``shifted``: a secret offset of 1 to 4 standard deviations either way (all-positive or all-negative rows);
    - ``wide``: heavy tails spanning several orders of magnitude, with exact zeros (decision points, ties);
    - ``uniform``: uniform in [-3, 3]; ``small``: magnitudes near 1e-3 (denormal-prone paths).

    ``wide`` also gives rows (along the last dimension, at secret positions) the shapes real data has and
    shortcuts miss: all zeros (padding: an ``eps`` dropped divides by zero), one element far above the rest (a
    maximum taken over part of the row misses it), and a run of equal values at the row's start (a fast path keyed
    on it).

    Values stay inside half of the dtype's finite range. Integer inputs are left alone (indices, offsets: their
    order and range are the op's). Boolean inputs (masks) keep the task's draw under ``task``, ``scaled`` and
    ``shifted``; under the others each row's values are shuffled along the last dimension (as many True per row:
    no row fully masked that was not), so a kernel that assumes the mask's shape instead of reading it fails. The
    reference process drops a seed whose reshaped inputs make eager PyTorch itself overflow where the float64
    reference does not (outside the op's domain in that dtype) and uses the task's own draw."""
    if not isinstance(value, torch.Tensor) or distribution == "task":
        return value
    if distribution not in DISTRIBUTIONS:
        raise TaskError(f"unknown input distribution {distribution!r}; use one of {sorted(DISTRIBUTIONS)}")
    gen = torch.Generator().manual_seed(seed + 7919)
    if value.dtype == torch.bool:
        return value if distribution in ("scaled", "shifted") else _shuffled_rows(value, gen)
    if not value.is_floating_point():
        return value
    rng = random.Random(seed * 31 + 17)
    x = value.double()
    if distribution == "signed":
        signs = torch.randint(0, 2, value.shape, generator=gen, dtype=torch.int8).double() * 2 - 1
        out = x * signs
    elif distribution == "scaled":
        out = x * (2.0 ** rng.uniform(2.0, 6.0)) * rng.choice((-1.0, 1.0))
    elif distribution == "shifted":
        spread = float(x.std()) if x.numel() > 1 else 1.0
        spread = spread if spread == spread and spread > 0 else 1.0
        noise = torch.rand(value.shape, generator=gen, dtype=torch.float64) * 2 - 1
        out = x * 0.5 + noise * spread * 0.5 + rng.choice((-1.0, 1.0)) * rng.uniform(1.0, 4.0) * spread
    elif distribution == "wide":
        tails = torch.exp(torch.randn(value.shape, generator=gen, dtype=torch.float64) * 1.5)
        zeros = torch.rand(value.shape, generator=gen, dtype=torch.float64) < 0.05
        out = _shaped_rows(torch.where(zeros, torch.zeros_like(x), x * tails), gen)
    elif distribution == "uniform":
        out = torch.rand(value.shape, generator=gen, dtype=torch.float64) * 6 - 3
    else:  # small
        out = x * 1e-3
    limit = torch.finfo(value.dtype).max / 2
    return out.clamp(-limit, limit).to(value.dtype)


ROW_SHAPES = 0.03  # of the rows of a `wide` input, each special shape gets this share (at least one row)


def _shaped_rows(out: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """``out`` (float64) with a few rows, at secret positions, zero, spiked or starting with a run of equal values
    (:func:`apply_distribution`; a case of two rows gets the first two kinds); vectors and inputs of one row or
    one column are left as they are."""
    if out.dim() < 2 or out.shape[-1] < 2 or out.numel() == 0:
        return out
    rows = out.reshape(-1, out.shape[-1]).clone()
    n, width = rows.shape
    if n < 2:
        return out
    share = max(1, int(n * ROW_SHAPES))
    order = torch.randperm(n, generator=gen)
    zero, spike, ties = order[:share], order[share:2 * share], order[2 * share:3 * share]
    share = len(spike)
    rows[zero] = 0.0
    scale = rows[spike].abs().amax(dim=-1).clamp_min(1.0)
    where = torch.randint(0, width, (share,), generator=gen)
    factor = 16.0 + 48.0 * torch.rand(share, generator=gen, dtype=torch.float64)
    sign = torch.randint(0, 2, (share,), generator=gen).double() * 2 - 1
    rows[spike, where] = scale * factor * sign
    run = int(torch.randint(2, min(width, 64) + 1, (1,), generator=gen))
    rows[ties, :run] = rows[ties, :1]
    return rows.reshape(out.shape)


def _shuffled_rows(value: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """A boolean input with each row's values shuffled along the last dimension (the same count of True per row);
    a broadcast input (stride 0) stays one, its distinct rows shuffled."""
    if value.dim() == 0 or value.shape[-1] < 2 or value.stride(-1) == 0:
        return value
    index = tuple(slice(0, 1) if st == 0 and n > 1 else slice(None) for n, st in zip(value.shape, value.stride(),
                                                                                     strict=True))
    base = value[index]
    rows = base.reshape(-1, base.shape[-1])
    order = torch.rand(rows.shape, generator=gen).argsort(dim=-1)
    shuffled = rows.gather(-1, order).reshape(base.shape)
    return shuffled.expand(value.shape) if base.shape != value.shape else shuffled


GENERATED_KEPT_BYTES = 4 << 30  # the reference process keeps this much of generated inputs (see generate_cases)
_DrawKey = tuple[str, bool, int, str, tuple[sentinels.Mark, ...]]
_generated: OrderedDict[_DrawKey, tuple[list[list[Any]], torch.Tensor, int]] = OrderedDict()


def generate_cases(task: LoadedTask, small: bool, seed: int, distribution: str,
                   marks: tuple[sentinels.Mark, ...] = ()) -> list[list[Any]]:
    """All cases for one seed, on the CPU, deterministically (fresh tensors for every caller; see :func:`_drawn`).
    ``marks``: integer inputs that hold a sentinel value at the seed's secret positions (:mod:`sentinels`)."""
    return [_fresh_copies(case) for case in _drawn(task, small, seed, distribution, marks)]


def generate_case(task: LoadedTask, small: bool, seed: int, distribution: str, index: int,
                  marks: tuple[sentinels.Mark, ...] = ()) -> list[Any]:
    """Case ``index`` of :func:`generate_cases` alone (only it is copied)."""
    return _fresh_copies(_drawn(task, small, seed, distribution, marks)[index])


def _drawn(task: LoadedTask, small: bool, seed: int, distribution: str,
           marks: tuple[sentinels.Mark, ...] = ()) -> list[list[Any]]:
    """The cases drawn for one seed, kept (never handed out: callers get copies).

    The same seed is asked for again and again: every re-validated timed call needs the inputs of one timing seed
    (eight of them, three re-validated calls per case and evaluation), and drawing a real op's inputs (tens of
    millions of elements, then the distribution) costs far more than judging the call. The most recent draws are
    kept (up to :data:`GENERATED_KEPT_BYTES`) with the generator's state after them, which is restored on a
    repeat: a caller sees exactly what drawing again would have given it, values and generator state alike."""
    key = (str(task.path), small, int(seed), distribution, marks)
    kept = _generated.get(key)
    if kept is None:
        torch.manual_seed(seed)
        cases = task.raw_cases(small)
        drawn = [[v if k in task.keep_inputs else apply_distribution(v, distribution, seed)
                  for k, v in enumerate(case)] for case in cases]
        for case, k, value, share in marks:
            drawn[case][k] = sentinels.marked(drawn[case][k], value, seed, case, k, share)
        size = sum(v.numel() * v.element_size() for case in drawn for v in case if isinstance(v, torch.Tensor))
        kept = (drawn, torch.get_rng_state(), size)
        _generated[key] = kept
        while len(_generated) > 1 and sum(entry[2] for entry in _generated.values()) > GENERATED_KEPT_BYTES:
            _generated.popitem(last=False)
    else:
        _generated.move_to_end(key)
        torch.set_rng_state(kept[1])
    return kept[0]


def _fresh_copies(values: list[Any]) -> list[Any]:
    """Copies of a case's values with their layout exactly as drawn: same sizes, strides and offsets (a broadcast
    input stays one), and inputs that shared memory share the copy of it."""
    copies: dict[int, Any] = {}
    fresh = []
    for v in values:
        if not isinstance(v, torch.Tensor):
            fresh.append(v)
            continue
        storage = v.untyped_storage()
        copy = copies.get(storage.data_ptr())
        if copy is None:
            copy = copies[storage.data_ptr()] = storage.clone()
        tensor = torch.empty(0, dtype=v.dtype, device=v.device).set_(copy, v.storage_offset(), v.size(), v.stride())
        fresh.append(tensor.requires_grad_(v.requires_grad))
    return fresh


def check_kept_inputs_vary(task: LoadedTask, small: bool, seeds: list[int]) -> None:
    """A kept input (``KEEP_INPUTS``) must still change with the seed: one that is the same bytes in every call (a
    rotary table built from ``arange`` alone) lets a kernel ignore it and compute the values itself, right only for
    that one table. Raises :class:`TaskError` saying how to draw it from the seed."""
    if not task.keep_inputs or len(set(seeds)) < 2:
        return
    first, second = (generate_cases(task, small, seed, "task") for seed in sorted(set(seeds))[:2])
    names = forward_parameter_names(task.model_cls)
    for case_a, case_b in zip(first, second):
        for k in sorted(task.keep_inputs):
            if k >= len(case_a):
                raise TaskError(f"{task.path}: KEEP_INPUTS names input {k}, but a case has only {len(case_a)} inputs")
            a, b = case_a[k], case_b[k]
            if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b):
                name = names[k] if k < len(names) else str(k)
                raise TaskError(
                    f"{task.path}: KEEP_INPUTS input {name!r} is the same for every seed, so a kernel could ignore "
                    "it and compute those values itself; draw it from torch's generator (for rotary tables: "
                    "positions from a random offset, as a decode step at some cache length sees them)")


def forward_parameter_names(model_cls: type[torch.nn.Module]) -> list[str]:
    try:
        return list(inspect.signature(model_cls.forward).parameters)[1:]
    except (TypeError, ValueError):
        return []


def describe(value: Any) -> dict[str, Any]:
    """Shape and dtype of a tensor (or the type and value of anything else), for reports."""
    if isinstance(value, torch.Tensor):
        return {"shape": list(value.shape), "dtype": str(value.dtype), "contiguous": bool(value.is_contiguous())}
    return {"type": type(value).__name__, "value": value if isinstance(value, (int, float, bool, str)) else None}


def rescaled(inputs: list[Any], scale: float, out: list[Any] | None = None) -> list[Any]:
    """Floating-point inputs multiplied by ``scale`` in their own dtype (other values unchanged): how timed
    calls vary their inputs. With ``out`` (same structure), the products are written into those tensors, so
    the storage stays the same while every value changes."""
    result = []
    for k, value in enumerate(inputs):
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            target = out[k] if out is not None else None
            result.append(torch.mul(value, scale, out=target) if target is not None else torch.mul(value, scale))
        else:
            result.append(value)
    return result


def sentinel_for(dtype: torch.dtype) -> Any:
    """A value that poisons any computation that reads it: NaN for floats, the maximum for integers."""
    if dtype.is_floating_point or dtype.is_complex:
        return float("nan")
    if dtype == torch.bool:
        return True
    return torch.iinfo(dtype).max


def guarded_copy(value: Any, device: str) -> Any:
    """Copy a tensor to ``device`` inside a larger sentinel-filled buffer.

    Out-of-bounds reads then pull in NaN (or huge integers) and out-of-bounds writes change the
    guard regions, which the verifier checks. Other values are returned unchanged. A tensor that cannot be
    guarded (empty, or not contiguous, e.g. channels-last) is still a copy: the caller may write into what this
    returns (a call reusing its storage), which must never change the input set it came from.
    """
    if not isinstance(value, torch.Tensor) or value.numel() == 0 or not value.is_contiguous():
        return value.to(device, copy=True) if isinstance(value, torch.Tensor) else value
    n = value.numel()
    buffer = torch.full((n + 2 * GUARD_ELEMENTS,), sentinel_for(value.dtype), dtype=value.dtype, device=device)
    inner = buffer[GUARD_ELEMENTS:GUARD_ELEMENTS + n].view(value.shape)
    inner.copy_(value)
    return inner


def guards_intact(value: Any) -> bool:
    """True when the sentinel regions around a guarded tensor were not written."""
    if not isinstance(value, torch.Tensor) or value.numel() == 0 or value.storage_offset() != GUARD_ELEMENTS:
        return True
    storage = torch.empty(0, dtype=value.dtype, device=value.device).set_(value.untyped_storage())
    if storage.numel() != value.numel() + 2 * GUARD_ELEMENTS:
        return True
    head, tail = storage[:GUARD_ELEMENTS], storage[GUARD_ELEMENTS + value.numel():]
    sentinel = sentinel_for(value.dtype)
    if value.dtype.is_floating_point:
        return bool(torch.isnan(head).all() and torch.isnan(tail).all())
    return bool((head == sentinel).all() and (tail == sentinel).all())


def hbm_bytes(task: LoadedTask, inputs: list[Any], outputs: list[torch.Tensor]) -> int:
    """Bytes that must cross device memory: the task's own count, else each input read once and
    each output written once."""
    fn = getattr(task.module, "hbm_bytes", None)
    if fn is not None:
        return int(fn(*inputs))
    tensors = [v for v in inputs if isinstance(v, torch.Tensor)] + list(outputs)
    return sum(t.numel() * t.element_size() for t in tensors)
