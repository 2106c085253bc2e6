"""Population: islands, MAP-Elites cells, selection with diversity, operators, migration."""

import random

import pytest

from kernelevo.search.population import Individual, Population


def ind(i, fitness, island=0, strategy="rowwise", backend="triton", generation=0):
    return Individual(id=f"c{i}", generation=generation, island=island, source=f"src{i}", fitness=fitness,
                      accepted=fitness > 0, backend=backend, strategy=strategy)


def test_best_and_elite_per_cell():
    pop = Population(islands=2)
    assert pop.add(ind(1, 1.0)) is True
    assert pop.add(ind(2, 0.8, strategy="tiled")) is False
    assert pop.add(ind(3, 1.5, island=1)) is True
    assert pop.best.id == "c3"
    assert {cell: e.id for cell, e in pop.elites.items()} == {("triton", "rowwise"): "c3", ("triton", "tiled"): "c2"}


def test_rejected_candidates_go_to_recent_failures_not_the_island():
    pop = Population(islands=1)
    for i in range(6):
        pop.add(ind(i, 0.0))
    assert pop.islands[0] == [] and [f.id for f in pop.failures[0]] == ["c2", "c3", "c4", "c5"]
    assert pop.best is None


def test_island_capacity_keeps_the_fittest():
    pop = Population(islands=1, island_capacity=3)
    for i, fit in enumerate([1.0, 3.0, 2.0, 0.5, 4.0]):
        pop.add(ind(i, fit))
    assert [m.id for m in pop.islands[0]] == ["c4", "c1", "c2"]


def test_empty_island_asks_for_fresh_or_repair():
    rng = random.Random(0)
    pop = Population(islands=2)
    assert {pop.plan_slot(0, rng).operator for _ in range(20)} == {"fresh"}
    pop.add(ind(9, 0.0))
    plans = [pop.plan_slot(0, rng) for _ in range(40)]
    assert {p.operator for p in plans} == {"fresh", "repair"}
    assert all(p.parents[0].id == "c9" for p in plans if p.operator == "repair")


def test_operators_and_crossover_parents_come_from_different_cells():
    rng = random.Random(1)
    pop = Population(islands=1)
    pop.add(ind(1, 1.0, strategy="rowwise"))
    pop.add(ind(2, 1.2, strategy="tiled"))
    pop.add(ind(3, 0.0))
    plans = [pop.plan_slot(0, rng) for _ in range(300)]
    assert {p.operator for p in plans} == {"fresh", "mutate", "tune", "crossover", "repair"}
    for plan in plans:
        if plan.operator == "crossover":
            assert plan.parents[0].cell != plan.parents[1].cell


def test_selection_prefers_fitness_but_keeps_diversity():
    rng = random.Random(2)
    pop = Population(islands=1)
    for i in range(8):
        pop.add(ind(i, 1.0 + i / 10, strategy=f"s{i % 4}"))
    picks = [pop.select_parent(0, rng).id for _ in range(2000)]
    assert picks.count("c7") > picks.count("c0")  # fitter parents are chosen more often
    assert len(set(picks)) >= 6  # but not only the best one


def test_ring_migration_copies_each_island_best_to_the_next():
    pop = Population(islands=3)
    pop.add(ind(1, 1.0, island=0))
    pop.add(ind(2, 2.0, island=1))
    moves = pop.migrate()
    assert moves == [(0, 1, "c1"), (1, 2, "c2")]
    assert [m.id for m in pop.islands[1]] == ["c2", "c1"] and [m.id for m in pop.islands[2]] == ["c2"]
    assert pop.migrate() == [(2, 0, "c2")]  # already-present individuals are not copied twice


def test_same_seed_same_plans():
    def plans(seed):
        rng, pop = random.Random(seed), Population(islands=2)
        for i in range(5):
            pop.add(ind(i, 0.5 + i / 7, island=i % 2, strategy=f"s{i % 3}"))
        return [(p.operator, [q.id for q in p.parents]) for p in (pop.plan_slot(j, rng) for j in range(50))]
    assert plans(7) == plans(7)
    assert plans(7) != plans(8)


def test_population_needs_an_island():
    with pytest.raises(ValueError):
        Population(islands=0)


def test_no_slot_asks_a_proposer_for_an_operator_it_cannot_apply():
    """The offline proposer cannot repair a kernel: with failures on the island, its slots still go to what it
    can do (before, they were spent on replies that could only be refusals)."""
    from kernelevo.search.offline.proposer import OfflineProposer
    from kernelevo.search.proposer import operators_of

    can = operators_of(OfflineProposer())
    assert "repair" not in can and {"fresh", "mutate", "tune"} <= can
    rng = random.Random(1)
    pop = Population(islands=1)
    pop.add(ind(3, 0.0))  # a failure, nothing accepted yet
    assert {pop.plan_slot(0, rng, can).operator for _ in range(40)} == {"fresh"}
    pop.add(ind(1, 1.0, strategy="rowwise"))
    pop.add(ind(2, 1.2, strategy="tiled"))
    assert {p.operator for p in (pop.plan_slot(0, rng, can) for _ in range(300))} == {"fresh", "mutate", "tune",
                                                                                       "crossover"}
    assert operators_of(object()) == {"fresh", "mutate", "crossover", "repair", "tune"}
