"""Near-duplicate input sets: a base set with a few of its values replaced (the plain run's stale-cache check).

How a near-duplicate differs from its base (:mod:`evaluator.plain_run` calls each right after a call of the base):
one value at the head, at the tail, at a random position of each floating input; or a block of values replaced
(the first half, the second half, a random interior block). A cache keyed by a few input values escapes a variant
only when the variant touches one of them: a prefix key never sees the tail and second-half variants, a suffix key
never sees the head and first-half ones, a head-and-tail key never sees the random point or the interior block.
Single values change an elementwise or row-wise answer; blocks change a global reduction's. A block takes a run of
the tensor's other values, none twice (a row inside it meets no new tie for an argmax or a sort to break). Two more
kinds reach caches keyed by everything a few values cannot move: ``swap`` exchanges two values in each of a few rows
(a key of the row's sum, moments, maximum or histogram stays as it was, bitwise in at least one row for the usual
orders of a reduction's additions: see :func:`_swapped`), ``rows_shuffled`` puts the rows in another order and
``rows_reversed`` reverses every row (a key blind to where a row or a value sits stays), and where a set has two
floating inputs or more, ``only-<k>`` replaces a block of input ``k`` alone (a key of the other inputs stays). Then,
``negated``, flips the sign of every floating input: a key of magnitudes or even moments (a sum of squares, of
``|x|``, a norm) stays, summed over every row or not; it brings in values new to the op, so the reference makes it
only where its answers stay finite wherever the base's are. Likewise ``masked`` (the last quarter of every row
-inf, as an attention mask pads) and, called right after it, ``masked_changed`` (the same mask, the rest of every row
reversed): a key lossy on infinities (a sum that is -inf whatever else a masked row holds) stays.

A near-duplicate travels as its :data:`Patches` (which values of the base's flattened tensors it replaces, and
with what), not as a copy of the whole set: the reference process makes them, the plain process applies them to
a fresh copy of the base it already holds. Both sides apply them with :func:`apply_patches`, so the set the
candidate is called on is the set the reference answered.
"""

from __future__ import annotations

from typing import Any

import torch

NEAR_KINDS = ("head", "tail", "point", "first_half", "second_half", "block", "swap", "rows_shuffled", "rows_reversed")
# Kinds whose values are new to the op (each other kind only moves values found in the tensor): made only where the
# reference's answers stay finite wherever the base's are (evaluator.sandboxed.reference: the op's domain is kept).
# ``negated``: every floating input's sign flipped, which no key of even moments or magnitudes (sum of squares,
# sum of |x|, a norm) tells from the base.
# ``masked``: the last quarter of every row set to -inf, as attention masks pad; ``masked_changed``: the same, and
# the rest of every row reversed, called right after ``masked`` (a key lossy on infinities, a sum that is -inf
# whatever else the row holds, stays).
SIGNED_KINDS = ("negated", "masked", "masked_changed")
NEGATED = "negated"  # the patch of a tensor whose every value's sign is flipped
# Kinds called right after another (the value), not after a call of the base set; made only where that one is.
FOLLOWS = {"masked_changed": "masked"}
# The strides of the swap kind's exchanges, one per row: see _swapped.
SWAP_STRIDES = (1, 8, 16, 128, 4, 2, 32, 64, 256, 512, 1024, 2048)
ONLY = "only-"  # an input set's kind "only-<k>": a block of its floating input k replaced, every other input as drawn

# Per input of a set: None (as in the base), (start, stop, values) replacing flat positions [start, stop), or NEGATED.
Patches = list[tuple[int, int, torch.Tensor] | str | None]


def _varied(value: Any, k: int, keep: frozenset[int]) -> bool:
    """Whether input ``k`` is one a near-duplicate changes: a floating tensor of two values or more, not kept."""
    return k not in keep and isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel() >= 2


def kinds_for(inputs: list[Any], keep: frozenset[int] = frozenset()) -> tuple[str, ...]:
    """The near-duplicate kinds of an input set: :data:`NEAR_KINDS` (each changes every floating input), and where
    two inputs or more are changed, one ``only-<k>`` kind per such input (a cache keyed by the other inputs alone
    answers it stale: ``y = a*x + y`` with ``x`` fixed and ``y`` carried over, in a user's loop)."""
    varied = [k for k, value in enumerate(inputs) if _varied(value, k, keep)]
    return NEAR_KINDS + (tuple(f"{ONLY}{k}" for k in varied) if len(varied) > 1 else ()) + SIGNED_KINDS


def near_duplicate_patches(inputs: list[Any], key: int, kind: str, keep: frozenset[int] = frozenset()) -> Patches:
    """What the near-duplicate ``kind`` (:func:`kinds_for`) of ``inputs`` replaces: in each floating tensor not kept
    as drawn (``keep``: KEEP_INPUTS; for ``only-<k>``, in input ``k`` alone), values found elsewhere in the same
    tensor (the op's domain is kept: no value is new to it; a single moved value differs from the one it replaces
    where the tensor holds another; ``swap`` exchanges two values in each of a few rows, so every order-blind
    summary of a row stays), the random choices drawn from ``key`` (pure)."""
    only = int(kind[len(ONLY):]) if kind.startswith(ONLY) and kind[len(ONLY):].isdigit() else None
    if kind not in NEAR_KINDS + SIGNED_KINDS and (only is None or not 0 <= only < len(inputs)):
        raise ValueError(f"unknown near-duplicate kind {kind!r} (one of {', '.join(NEAR_KINDS + SIGNED_KINDS)}, "
                         "or only-<input>)")
    generator = torch.Generator().manual_seed(key & 0x7FFFFFFFFFFFFFFF)
    patches: Patches = []
    for k, value in enumerate(inputs):
        if not _varied(value, k, keep) or (only is not None and k != only):
            patches.append(None)
            continue
        if kind == NEGATED:
            patches.append(NEGATED)
            continue
        if kind in ("masked", "masked_changed"):
            patches.append(_masked(value, changed=kind == "masked_changed"))
            continue
        flat = value.detach().reshape(-1)
        n = flat.numel()
        if kind in ("head", "tail", "point"):
            at = 0 if kind == "head" else n - 1 if kind == "tail" else int(torch.randint(0, n, (1,),
                                                                                           generator=generator))
            patches.append((at, at + 1, _another_value(flat, at, generator).reshape(1).cpu()))
        elif kind == "swap":
            patches.append(_swapped(flat, _row_length(value), generator))
        elif kind in ("rows_shuffled", "rows_reversed"):
            patches.append(_rows_moved(value, kind == "rows_reversed", generator))
        else:
            start, stop = _block(n, "block" if only is not None else kind, generator)
            patches.append((start, stop, _moved_run(flat, start, stop, generator).cpu()))
    return patches


def _swapped(flat: torch.Tensor, row: int, generator: torch.Generator) -> tuple[int, int, torch.Tensor] | None:
    """Two values exchanged in each of up to :data:`SWAP_STRIDES` consecutive rows (``row``: the length of the last
    dimension), from a random row on: in the ``k``-th, positions ``i`` and ``i + s`` for its stride ``s`` and the
    ``i < s`` whose two values are farthest apart; ``(start, stop, values)`` spanning them; None where no row has two
    such values that differ (nothing to exchange).

    A summary of a row is order-blind in exact arithmetic only: a floating-point sum adds in some order and rounds,
    and a key read bitwise misses an exchange that moves a value into another partial sum. An exchange of ``i`` and
    ``i + s`` with ``i < s`` is the first addition of an accumulator that starts at ``i`` and steps by ``s``, which
    rounds the same either way (addition commutes exactly): ``s = 1`` for a sum from the row's start (a loop, a
    thread holding neighbouring values), ``s = 8`` for numpy's eight accumulators (the Triton interpreter), 16 to 1
    for a warp's butterfly, 128 to 2048 for a block's threads each summing every ``s``-th value."""
    row = max(1, min(row, flat.numel()))
    strides = [s for s in SWAP_STRIDES if s < row]
    if not strides:
        return None
    rows = flat.numel() // row
    count = min(rows, len(strides))
    begin = int(torch.randint(0, rows - count + 1, (1,), generator=generator)) * row
    span = flat[begin:begin + count * row].clone()
    moved: list[int] = []
    for k, s in enumerate(strides[:count]):
        at, width = k * row, min(s, row - s)
        distance = (span[at:at + width].double() - span[at + s:at + s + width].double()).abs().nan_to_num(nan=0.0)
        if not bool((distance > 0).any()):
            continue
        i = at + int(distance.argmax())
        span[i], span[i + s] = span[i + s].clone(), span[i].clone()
        moved += [i, i + s]
    if not moved:
        return None
    start, stop = min(moved), max(moved) + 1
    return begin + start, begin + stop, span[start:stop].cpu()


def _row_length(value: torch.Tensor) -> int:
    """How many values a row of ``value`` holds (its last dimension; a 0-d tensor is one row of one)."""
    return value.shape[-1] if value.dim() else value.numel()


def _rows_moved(value: torch.Tensor, reversed_: bool,
                generator: torch.Generator) -> tuple[int, int, torch.Tensor] | None:
    """Every row (the last dimension) reversed, or the rows put in another order: each row holds what it held, so a
    key blind to where values sit (a sum of hashes of each value and its column, of each row's hash) stays; None
    where nothing would move (one value per row, or one row)."""
    row = _row_length(value)
    rows = value.detach().reshape(-1, max(row, 1))
    if reversed_:
        if row < 2:
            return None
        moved = rows.flip(1)
    else:
        if rows.shape[0] < 2:
            return None
        order = torch.randperm(rows.shape[0], generator=generator)
        if bool((order == torch.arange(rows.shape[0])).all()):
            order = order.roll(1)
        moved = rows[order.to(rows.device)]
    return 0, moved.numel(), moved.reshape(-1).cpu()


def _masked(value: torch.Tensor, changed: bool) -> tuple[int, int, torch.Tensor] | None:
    """The last quarter of every row (the last dimension) set to -inf, as a padded attention mask sets it; with
    ``changed``, the rest of each row reversed too (its values, another order). None for rows of one value."""
    row = _row_length(value)
    if row < 2:
        return None
    masked = max(1, row // 4)
    rows = value.detach().reshape(-1, row).clone()
    if changed:
        rows[:, : row - masked] = rows[:, : row - masked].flip(1)
    rows[:, row - masked:] = float("-inf")
    return 0, rows.numel(), rows.reshape(-1).cpu()


def near_duplicate_inputs(inputs: list[Any], key: int, kind: str, keep: frozenset[int] = frozenset()) -> list[Any]:
    """``inputs`` made into their near-duplicate ``kind`` (see :func:`near_duplicate_patches`; pure)."""
    return apply_patches(inputs, near_duplicate_patches(inputs, key, kind, keep))


def apply_patches(inputs: list[Any], patches: Patches) -> list[Any]:
    """``inputs`` with ``patches`` applied, each patched tensor a contiguous copy of its own (the others as given)."""
    if len(patches) != len(inputs):
        raise ValueError(f"{len(patches)} patches for {len(inputs)} inputs")
    out = []
    for value, patch in zip(inputs, patches):
        if patch is None:
            out.append(value)
            continue
        if patch == NEGATED:
            out.append(value.detach().neg().contiguous())
            continue
        if isinstance(patch, str):
            raise ValueError(f"unknown patch {patch!r}")
        start, stop, values = patch
        own = value.detach().clone(memory_format=torch.contiguous_format)
        own.view(-1)[start:stop] = values.to(own.device)
        out.append(own)
    return out


def _moved_run(flat: torch.Tensor, start: int, stop: int, generator: torch.Generator) -> torch.Tensor:
    """``stop - start`` values of ``flat`` from outside ``[start, stop)``, each position at most once (a run of the
    rest of the tensor from a random offset, wrapping around): the block's values are other values of the op's
    domain, and no value is repeated in it (a repeat would make a tie an argmax or a sort may break either way)."""
    length, outside = stop - start, flat.numel() - (stop - start)
    offset = int(torch.randint(0, outside, (1,), generator=generator))
    first = min(offset + length, outside)  # the run wraps around at most once (the outside is the larger part)
    wrapped = length - (first - offset)
    return torch.cat([_outside(flat, start, stop, offset, first), _outside(flat, start, stop, 0, wrapped)])


def _outside(flat: torch.Tensor, start: int, stop: int, a: int, b: int) -> torch.Tensor:
    """Positions ``[a, b)`` of ``flat`` with ``[start, stop)`` left out, read in place (never the whole rest)."""
    skip = stop - start
    return torch.cat([flat[a:max(a, min(b, start))], flat[max(a, start) + skip:max(b, start) + skip]])


def _another_value(flat: torch.Tensor, at: int, generator: torch.Generator) -> torch.Tensor:
    """A value of ``flat`` other than ``flat[at]``, the farthest from it of a random sample (``flat[at]`` itself
    where every value equals it): a value next to the one it replaces would change the answer by less than the
    tolerance, and a cache answering stale would pass."""
    here = flat[at].double()
    for _ in range(4):
        sources = torch.randint(0, flat.numel(), (64,), generator=generator)
        distance = (flat[sources].double() - here).abs().nan_to_num(nan=0.0)
        if bool((distance > 0).any()):
            return flat[sources[int(distance.argmax())]].clone()
    differs = (flat != flat[at]).nonzero()
    return flat[differs[0, 0]].clone() if differs.numel() else flat[at].clone()


def _block(n: int, kind: str, generator: torch.Generator) -> tuple[int, int]:
    """The positions ``[start, stop)`` a block variant replaces in a tensor of ``n`` values (``n >= 2``)."""
    half = n // 2  # the outside always holds at least as many values as the block
    if kind == "first_half":
        return 0, max(1, half)
    if kind == "second_half" or n < 4:
        return n - max(1, half), n
    length = int(torch.randint(max(1, n // 4), max(2, half) + 1, (1,), generator=generator))
    length = min(length, n - 2)  # the first and the last value stay
    start = int(torch.randint(1, n - length, (1,), generator=generator))
    return start, start + length
