"""Which calls a candidate gets, in which order (parent side, pure).

A candidate must not be able to tell a judged call from any other, nor a call of the verifier from a
call in a user's program: every call below is judged, their number and order are secret (drawn from the
parent's random source), inputs arrive sometimes inside sentinel guard regions and sometimes as the plain
contiguous tensors a user passes, sometimes into the storage of the previous call of the same case (a
cache keyed by pointer returns stale answers) and sometimes fresh, sometimes with NaN-poisoned
allocations. A kernel right only for its first N calls is caught by any later call; one that behaves only
inside guard regions, only under poisoning or only on fresh storage, by the calls without them.
"""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass


@dataclass(frozen=True)
class InputSet:
    """One (case, seed) input list the reference wrote, and the distribution it was drawn from."""

    case: int
    seed: int
    file: str
    distribution: str = "task"


@dataclass(frozen=True)
class Call:
    """One call of ``forward``; ``name`` is the candidate's only handle on it (its output file)."""

    name: str
    inputs: InputSet
    storage: str  # "fresh" | "reuse"
    guarded: bool
    poison: bool
    group: str | None = None  # calls of one group run on identical inputs: outputs must agree bitwise

    def request(self, index: int) -> dict:
        return {"name": self.name, "input": index, "case": self.inputs.case, "storage": self.storage,
                "guarded": self.guarded, "poison": self.poison}


def plan_checks(inputs: list[InputSet], rng: random.Random, *, repeats: int = 3, extra: tuple[float, float] = (1.0, 2.0)
                ) -> list[Call]:
    """The correctness calls: each input set once, the first seed's ``repeats`` times (bitwise agreement), and
    ``extra`` (a range, as a multiple of those) more calls on input sets drawn at random, all shuffled."""
    if not inputs:
        return []
    seeds = sorted({i.seed for i in inputs}, key=[i.seed for i in inputs].index)
    base: list[tuple[InputSet, str | None]] = []
    for item in inputs:
        group = f"g{item.case}-{item.seed}" if item.seed == seeds[0] else None
        base += [(item, group)] * (repeats if group else 1)
    more = round(len(base) * rng.uniform(*extra))
    calls = base + [(rng.choice(inputs), None) for _ in range(more)]
    rng.shuffle(calls)
    planned, seen_case = [], set()
    for item, group in calls:
        first = item.case not in seen_case
        seen_case.add(item.case)
        planned.append(Call(
            name=f"o-{secrets.token_hex(6)}",
            inputs=item,
            storage="fresh" if first or rng.random() < 0.3 else "reuse",
            guarded=first or rng.random() < 0.5,  # the first call of a case always checks out-of-bounds stores
            poison=first or rng.random() < 0.5,  # and always finds NaN where it reads memory it did not write
            group=group,
        ))
    return planned


def plan_sample(trials: int, cases: int, rng: random.Random, per_case: int = 3) -> list[dict]:
    """Timed calls re-validated against the reference: ``per_case`` secret trial numbers per case."""
    sample = []
    for case in range(cases):
        chosen = sorted(rng.sample(range(trials), k=min(per_case, trials)))
        sample.append({"case": case, "trials": chosen, "names": [f"t-{secrets.token_hex(6)}" for _ in chosen]})
    return sample


def case_elements(cases: list[dict]) -> dict[int, int]:
    """Input elements per case of a plan (``plan["cases"]``: each with its inputs' shapes; non-tensors count 0)."""
    return {int(case["case"]): sum(_numel(v.get("shape")) for v in case["inputs"]) for case in cases}


def _numel(shape: list[int] | None) -> int:
    if shape is None:
        return 0
    total = 1
    for n in shape:
        total *= int(n)
    return total
