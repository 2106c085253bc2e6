"""The population: islands with migration, a MAP-Elites archive, parent and operator selection.

Pure and deterministic: every random choice draws from the ``random.Random`` passed in, and the
population changes only through :meth:`Population.add` and :meth:`Population.migrate`, which the
loop calls in a fixed order. Replaying the same additions therefore rebuilds the same state, which
is how a resumed run continues exactly where the killed one stopped.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evaluator.verdict import Verdict

DEFAULT_STRATEGY = "default"
OPERATOR_WEIGHTS = {"mutate": 0.4, "tune": 0.2, "crossover": 0.15, "repair": 0.1, "fresh": 0.15}
ELITE_PICK_PROBABILITY = 0.3  # chance a parent comes from the elite archive (diversity across cells)
TOURNAMENT = 3
RECENT_FAILURES = 4


@dataclass
class Individual:
    """One evaluated candidate as the population sees it."""

    id: str
    generation: int
    island: int
    source: str
    fitness: float
    accepted: bool
    backend: str = "triton"
    strategy: str = DEFAULT_STRATEGY
    operator: str = "fresh"
    parent_ids: list[str] = field(default_factory=list)
    feedback: str = ""
    verdict: Verdict | None = None  # None: the proposal never reached the evaluator

    @property
    def cell(self) -> tuple[str, str]:
        """The MAP-Elites cell: backend x strategy."""
        return self.backend, self.strategy or DEFAULT_STRATEGY


@dataclass
class Plan:
    """What one slot of a generation asks the proposer for."""

    island: int
    operator: str
    parents: list[Individual]


def _rank_key(ind: Individual) -> tuple[float, int]:
    # Higher fitness first; among equals the older one (stable, and not biased to the latest fluke).
    return ind.fitness, -ind.generation


class Population:
    """Islands of accepted candidates, recent failures per island, and the elite per cell."""

    def __init__(self, islands: int = 4, island_capacity: int = 16) -> None:
        if islands < 1 or island_capacity < 1:
            raise ValueError("a population needs at least one island of capacity one")
        self.islands: list[list[Individual]] = [[] for _ in range(islands)]
        self.failures: list[list[Individual]] = [[] for _ in range(islands)]
        self.elites: dict[tuple[str, str], Individual] = {}
        self.capacity = island_capacity
        self.best: Individual | None = None

    def add(self, ind: Individual) -> bool:
        """Insert an evaluated candidate; returns True when it became the best of the whole run."""
        island = ind.island % len(self.islands)
        if not ind.accepted:
            recent = self.failures[island]
            recent.append(ind)
            del recent[:-RECENT_FAILURES]
            return False
        members = self.islands[island]
        members.append(ind)
        members.sort(key=_rank_key, reverse=True)
        del members[self.capacity :]
        elite = self.elites.get(ind.cell)
        if elite is None or ind.fitness > elite.fitness:
            self.elites[ind.cell] = ind
        if self.best is None or ind.fitness > self.best.fitness:
            self.best = ind
            return True
        return False

    def migrate(self) -> list[tuple[int, int, str]]:
        """Ring migration: each island's best goes to the next island. Returns (from, to, id) moves."""
        moves = []
        bests = [members[0] if members else None for members in self.islands]
        for source, ind in enumerate(bests):
            if ind is None or len(self.islands) == 1:
                continue
            target = (source + 1) % len(self.islands)
            members = self.islands[target]
            if any(m.id == ind.id for m in members):
                continue
            members.append(ind)
            members.sort(key=_rank_key, reverse=True)
            del members[self.capacity :]
            moves.append((source, target, ind.id))
        return moves

    def _tournament(self, members: list[Individual], rng: random.Random) -> Individual:
        picks = [members[rng.randrange(len(members))] for _ in range(min(TOURNAMENT, len(members)))]
        return max(picks, key=_rank_key)

    def select_parent(self, island: int, rng: random.Random, avoid_cell: tuple[str, str] | None = None) -> Individual:
        """A parent by fitness (tournament in the island) or, for diversity, an elite of another cell."""
        members = self.islands[island % len(self.islands)]
        elite_pool = [e for cell, e in sorted(self.elites.items()) if cell != avoid_cell]
        if elite_pool and (not members or rng.random() < ELITE_PICK_PROBABILITY):
            return elite_pool[rng.randrange(len(elite_pool))]
        if not members:
            raise LookupError("no accepted candidate to select from")
        return self._tournament(members, rng)

    def choose_operator(self, island: int, rng: random.Random, operators: frozenset[str] | None = None) -> str:
        """Which operator this slot applies, given what its island holds and what the proposer can do
        (``operators``; None: everything)."""
        island %= len(self.islands)
        can = frozenset(OPERATOR_WEIGHTS) if operators is None else operators
        has_accepted = bool(self.islands[island]) or bool(self.elites)
        has_failure = bool(self.failures[island]) and "repair" in can
        if not has_accepted:
            return "repair" if has_failure and rng.random() < 0.5 else "fresh"
        weights = {name: w for name, w in OPERATOR_WEIGHTS.items() if name in can or name == "fresh"}
        if not has_failure:
            weights.pop("repair", None)
        if len(self.elites) < 2 and len(self.islands[island]) < 2:
            weights.pop("crossover", None)
        names = sorted(weights)
        return rng.choices(names, weights=[weights[n] for n in names])[0]

    def plan_slot(self, island: int, rng: random.Random, operators: frozenset[str] | None = None) -> Plan:
        """Choose the operator and parents for one proposal request on ``island``."""
        island %= len(self.islands)
        operator = self.choose_operator(island, rng, operators)
        if operator == "fresh":
            return Plan(island, operator, [])
        if operator == "repair":
            return Plan(island, operator, [self.failures[island][-1]])
        first = self.select_parent(island, rng)
        if operator != "crossover":
            return Plan(island, operator, [first])
        try:
            second = self.select_parent(island, rng, avoid_cell=first.cell)
        except LookupError:
            second = first
        if second.id == first.id:
            return Plan(island, "mutate", [first])
        return Plan(island, operator, [first, second])
