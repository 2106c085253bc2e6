"""Loop mechanics with a scripted proposer and a scripted evaluator (no torch, milliseconds each)."""

import json
import threading

import pytest
from search_doubles import ScriptedEvaluator, ScriptedProposer, candidate_source

from evaluator.verdict import Verdict
from kernelevo.search.api import run_search
from kernelevo.search.budget import Budget
from kernelevo.search.config import SearchConfig
from kernelevo.search.engine import SearchLoop
from kernelevo.search.proposer import Proposal
from kernelevo.search.rundir import RunDir, read_jsonl

UNLIMITED = dict(candidates=None, plateau_generations=None)


@pytest.fixture
def task(tmp_path):
    path = tmp_path / "task.py"
    path.write_text("# a task file (the scripted evaluator does not read it)\n")
    return path


def search(task, run_dir, budget, proposer=None, evaluator=None, seed=0, config=None, **kwargs):
    """A scripted search; one evaluation at a time unless ``config`` says otherwise."""
    return run_search(task, op_id="demo", backend="triton", proposer=proposer or ScriptedProposer(),
                      budget=budget, device="cuda", run_dir=run_dir, seed=seed,
                      evaluator=evaluator or ScriptedEvaluator(), config=config or SearchConfig(parallel_evaluations=1),
                      **kwargs)


def archive(run_dir):
    """The archive's records by id (evaluations in flight append in completion order)."""
    return sorted((r["id"], r["source_sha"], r["fitness"], r["parent_ids"], r["operator"], r["island"])
                  for r in read_jsonl(run_dir / "archive.jsonl"))


def test_candidate_budget_is_exact_and_everything_is_recorded(task, tmp_path):
    evaluator = ScriptedEvaluator()
    result = search(task, tmp_path / "run", Budget(candidates=21, plateau_generations=None), evaluator=evaluator)
    assert result.stop_reason == "budget_candidates"
    assert result.candidates_evaluated == 21 == len(evaluator.calls)
    records = read_jsonl(tmp_path / "run" / "archive.jsonl")
    assert len(records) == 21
    for field in ("id", "parent_ids", "operator", "island", "cell", "source", "verdict", "fitness", "tokens_in",
                  "cost_usd", "t_eval_start", "t_eval_end", "run_elapsed_s"):
        assert all(field in r for r in records), field
    assert result.candidates_accepted == sum(r["accepted"] for r in records)
    assert result.tokens_in == 100 * 21 and result.cost_usd == pytest.approx(21 * (100 * 2.5 + 50 * 10) / 1e6)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["stop_reason"] == "budget_candidates" and summary["stop_reasons"][0]["reason"] == "budget_candidates"
    best = max(records, key=lambda r: r["fitness"])
    assert (tmp_path / "run" / "best" / "kernel.py").read_text() == best["source"] == result.best["source"]
    assert 0 <= result.evaluator_busy_fraction <= 1 and result.time_to_first_accepted_s is not None
    # where the wall time went, kept in the summary (the Celery bench compares the two paths' phases)
    assert set(summary["phases"]) >= {"session_start_s", "search_s", "sanitize_s"}
    assert all(v >= 0 for v in summary["phases"].values())


def test_search_improves_on_its_parents(task, tmp_path):
    result = search(task, tmp_path / "run", Budget(candidates=64, plateau_generations=None), seed=3)
    records = read_jsonl(tmp_path / "run" / "archive.jsonl")
    first_gen_best = max(r["fitness"] for r in records if r["generation"] == 0)
    assert result.best["fitness"] > first_gen_best
    assert {r["operator"] for r in records} >= {"fresh", "mutate", "tune", "crossover", "repair"}


def test_same_seed_same_run_other_seed_other_run(task, tmp_path):
    budget = Budget(candidates=40, plateau_generations=None)
    search(task, tmp_path / "a", budget, seed=5)
    search(task, tmp_path / "b", budget, seed=5)
    search(task, tmp_path / "c", budget, seed=6)
    assert archive(tmp_path / "a") == archive(tmp_path / "b")
    assert archive(tmp_path / "a") != archive(tmp_path / "c")


def test_token_and_money_budgets(task, tmp_path):
    by_tokens = search(task, tmp_path / "t", Budget(tokens=1000, **UNLIMITED))
    assert by_tokens.stop_reason == "budget_tokens" and by_tokens.candidates_evaluated == 7  # 7 x 150 tokens
    # Spent: the first generation (8 slots) is requested whole; nothing is requested ahead of it.
    assert by_tokens.tokens_in + by_tokens.tokens_out == 8 * 150
    later = search(task, tmp_path / "t2", Budget(tokens=2000, **UNLIMITED),
                   config=SearchConfig(generation_size=4))
    assert later.stop_reason == "budget_tokens" and later.tokens_in + later.tokens_out <= 2000 + 150
    by_usd = search(task, tmp_path / "u", Budget(usd=0.005, **UNLIMITED))
    assert by_usd.stop_reason == "budget_usd" and by_usd.candidates_evaluated == 7  # 7 x 0.00075 USD


def test_wall_time_budget(task, tmp_path):
    result = search(task, tmp_path / "run", Budget(minutes=0.002, **UNLIMITED),
                    evaluator=ScriptedEvaluator(delay_s=0.01))
    assert result.stop_reason == "budget_time" and result.candidates_evaluated > 0


def test_plateau_stops_an_untimed_run_after_the_first_accepted(task, tmp_path):
    result = search(task, tmp_path / "run", Budget(candidates=None, plateau_generations=2),
                    evaluator=ScriptedEvaluator(timed=False), config=SearchConfig(generation_size=4))
    assert result.stop_reason == "plateau" and result.best["fitness"] == 1.0
    assert result.generations == 3 and not result.timed


def test_duplicates_are_judged_once_and_an_exhausted_proposer_stops(task, tmp_path):
    class Same:
        name = "same"

        def propose(self, request):
            return [Proposal(source=candidate_source(1.0, "only"))]

    evaluator = ScriptedEvaluator()
    result = search(task, tmp_path / "run", Budget(**UNLIMITED), proposer=Same(), evaluator=evaluator)
    assert result.stop_reason == "proposer_exhausted"
    assert len(evaluator.calls) == 1 and result.duplicates == 8 * 4 - 1


def test_empty_replies_and_raising_proposers_are_recorded_and_skipped(task, tmp_path):
    class Flaky:
        name = "flaky"

        def propose(self, request):
            if request.seed % 3 == 0:
                raise RuntimeError("endpoint said 500")
            if request.seed % 3 == 1:
                return [Proposal(source="", error="no code block in the reply")]
            return [Proposal(source=candidate_source(1.0 + request.seed / 1e10, str(request.seed)))]

    result = search(task, tmp_path / "run", Budget(candidates=10, plateau_generations=None), proposer=Flaky())
    records = read_jsonl(tmp_path / "run" / "archive.jsonl")
    errors = [r for r in records if r["kind"] == "proposal_error"]
    assert result.candidates_evaluated == 10 and result.proposal_errors == len(errors) > 0
    assert any("endpoint said 500" in r["detail"] for r in errors)
    assert any("no code block" in r["detail"] for r in errors)


def test_parents_carry_feedback(task, tmp_path):
    proposer = ScriptedProposer()
    search(task, tmp_path / "run", Budget(candidates=48, plateau_generations=None), proposer=proposer)
    with_parents = [r for r in proposer.requests if r.parents]
    assert with_parents and all(p.feedback.startswith("Verdict: ") for r in with_parents for p in r.parents)
    repairs = [p for r in with_parents if r.operator == "repair" for p in r.parents]
    assert repairs and all("max_abs_err=3.2" in p.feedback for p in repairs)


def test_loop_migrates_island_bests(task, tmp_path):
    run = RunDir(tmp_path / "run")
    run.create({})
    loop = SearchLoop(op_id="demo", task_source="", proposer=ScriptedProposer(), evaluator=ScriptedEvaluator(),
                      run=run, budget=Budget(candidates=24, plateau_generations=None),
                      config=SearchConfig(islands=2, generation_size=4, migration_interval=1), seed=0,
                      backend="triton", hardware={}, prices={})
    assert loop.run() == "budget_candidates"
    # Islands only gain members from other islands by migration (elite picks do not insert).
    assert any(m.island != 1 for m in loop.population.islands[1])
    assert any(m.island != 0 for m in loop.population.islands[0])


def test_cancellation_is_checked_between_candidates(task, tmp_path):
    seen = []
    result = search(task, tmp_path / "run", Budget(**UNLIMITED), on_progress=seen.append,
                    should_cancel=lambda: len(seen) >= 5)
    assert result.stop_reason == "cancelled" and result.candidates_evaluated == 5
    assert seen[-1].event == "done" and seen[-1].stop_reason == "cancelled"
    assert seen[0].event == "candidate" and seen[0].best_speedup_vs_eager is not None


def test_proposals_for_the_next_generation_overlap_evaluation(task, tmp_path):
    search(task, tmp_path / "run", Budget(candidates=16, plateau_generations=None),
           proposer=ScriptedProposer(delay_s=0.01), evaluator=ScriptedEvaluator(delay_s=0.01),
           config=SearchConfig(generation_size=8, proposal_workers=8))
    slots = {r["slot"]: r for r in read_jsonl(tmp_path / "run" / "proposals.jsonl")}
    g0_end = max(r["t_eval_end"] for r in read_jsonl(tmp_path / "run" / "archive.jsonl") if r["generation"] == 0)
    assert min(slots[f"g1-{i}"]["t_requested"] for i in range(8)) < g0_end


def test_existing_run_directory_is_not_overwritten(task, tmp_path):
    search(task, tmp_path / "run", Budget(candidates=2))
    with pytest.raises(FileExistsError, match="--resume"):
        search(task, tmp_path / "run", Budget(candidates=2))


def test_backend_any_alternates_islands_between_triton_and_cuda(task, tmp_path):
    proposer = ScriptedProposer()
    run_search(task, op_id="demo", backend="any", proposer=proposer, budget=Budget(candidates=8), device="cuda",
               run_dir=tmp_path / "run", evaluator=ScriptedEvaluator(), config=SearchConfig(islands=4))
    records = read_jsonl(tmp_path / "run" / "proposals.jsonl")
    assert {(r["island"], r["backend"]) for r in records} == {(0, "triton"), (1, "cuda"), (2, "triton"), (3, "cuda")}


class PrefetchingEvaluator(ScriptedEvaluator):
    """Records the order of prefetch and evaluate calls."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, str]] = []

    def prefetch(self, source: str) -> None:
        self.events.append(("prefetch", source))

    def evaluate_source(self, source: str, name: str) -> Verdict:
        self.events.append(("evaluate", source))
        return super().evaluate_source(source, name)


def test_the_next_candidate_is_prefetched_while_the_current_one_is_judged(task, tmp_path):
    evaluator = PrefetchingEvaluator()
    search(task, tmp_path / "run", Budget(candidates=12, plateau_generations=None), evaluator=evaluator)
    evaluated = [s for kind, s in evaluator.events if kind == "evaluate"]
    prefetched = [s for kind, s in evaluator.events if kind == "prefetch"]
    assert prefetched, "the loop never prefetched"
    # Announced before its own evaluation, and only ever for candidates that were then evaluated.
    assert any(s in evaluated for s in prefetched)
    for source in prefetched:
        if source in evaluated:
            assert evaluator.events.index(("prefetch", source)) < evaluator.events.index(("evaluate", source))


class CPUOnlyEvaluator(ScriptedEvaluator):
    """Refuses every other candidate the way the verifier refuses a CUDA kernel on a CPU."""

    def evaluate_source(self, source: str, name: str) -> Verdict:
        from evaluator.verdict import NeedsGPU

        if len(self.calls) % 2:
            self.calls.append(name)
            raise NeedsGPU(f"{name}: the CUDA kernels compile (NVRTC), but running them needs a GPU")
        return super().evaluate_source(source, name)


def test_a_candidate_that_needs_a_gpu_is_recorded_and_the_search_goes_on(task, tmp_path):
    result = search(task, tmp_path / "run", Budget(candidates=6, plateau_generations=None),
                    evaluator=CPUOnlyEvaluator())
    records = read_jsonl(tmp_path / "run" / "archive.jsonl")
    refused = [r for r in records if "needs a GPU" in (r.get("detail") or "")]
    assert refused and all(r["kind"] == "proposal_error" and not r["accepted"] for r in refused)
    assert result.candidates_evaluated >= 1 and result.best is not None


def test_parallel_evaluations_give_the_run_of_one_at_a_time(task, tmp_path):
    """Candidates judged three at once, absorbed in submission order: the same population, best and
    counters as the sequential run (only the archive's line order may differ)."""
    budget = Budget(candidates=40, plateau_generations=None)
    sequential = search(task, tmp_path / "one", budget, seed=5)
    evaluator = ScriptedEvaluator(delay_s=0.01)
    parallel = search(task, tmp_path / "three", budget, seed=5, evaluator=evaluator,
                      config=SearchConfig(parallel_evaluations=3))
    assert evaluator.most_in_flight == 3
    assert archive(tmp_path / "one") == archive(tmp_path / "three")
    assert parallel.best["id"] == sequential.best["id"] and parallel.stop_reason == sequential.stop_reason
    assert (parallel.candidates_evaluated, parallel.candidates_accepted, parallel.generations) == (
        sequential.candidates_evaluated, sequential.candidates_accepted, sequential.generations)


def generation_of(name):
    return int(name.rsplit("-g", 1)[1].split("-")[0])


class OverlapEvaluator(ScriptedEvaluator):
    """Records when each candidate's evaluation starts and ends, and holds the last candidate of generation 0
    until one of generation 1 has started: a loop that overlaps generations lets it go at once; one that waited
    for generation 0 to finish would hold it until the timeout (so the outcome does not depend on scheduling)."""

    LAST_OF_FIRST = "demo-g0-7"  # SearchConfig's default generation size is 8

    def __init__(self):
        super().__init__()
        self.timeline = []
        self.second_started = threading.Event()

    def evaluate_source(self, source, name):
        with self._lock:
            self.timeline.append(("start", name))
        if generation_of(name) == 1:
            self.second_started.set()
        if name == self.LAST_OF_FIRST:
            self.second_started.wait(timeout=60)
        try:
            return super().evaluate_source(source, name)
        finally:
            with self._lock:
                self.timeline.append(("end", name))


def test_the_next_generation_starts_while_the_last_results_of_this_one_come_in(task, tmp_path):
    evaluator = OverlapEvaluator()
    search(task, tmp_path / "run", Budget(candidates=24, plateau_generations=None), evaluator=evaluator,
           config=SearchConfig(parallel_evaluations=3))
    assert ("start", OverlapEvaluator.LAST_OF_FIRST) in evaluator.timeline
    last_end = max(i for i, (kind, name) in enumerate(evaluator.timeline) if kind == "end" and generation_of(name) == 0)
    first_start = min(i for i, (kind, name) in enumerate(evaluator.timeline)
                      if kind == "start" and generation_of(name) == 1)
    assert first_start < last_end, evaluator.timeline


@pytest.mark.parametrize("budget", [Budget(candidates=None, plateau_generations=2),
                                    Budget(tokens=2600, **UNLIMITED), Budget(usd=0.011, **UNLIMITED)],
                         ids=["plateau", "tokens", "usd"])
def test_overlapping_generations_stop_where_one_at_a_time_stops(task, tmp_path, budget):
    """A plateau (decided when a generation closes) and spend budgets (that size the planned generations)
    give the same population with three evaluations in flight as with one; candidates of a generation
    that a plateau cut short are not counted."""
    config = dict(generation_size=4)
    sequential = search(task, tmp_path / "one", budget, seed=2, evaluator=ScriptedEvaluator(timed=False),
                        config=SearchConfig(parallel_evaluations=1, **config))
    parallel = search(task, tmp_path / "three", budget, seed=2,
                      evaluator=ScriptedEvaluator(timed=False, delay_s=0.01),
                      config=SearchConfig(parallel_evaluations=3, **config))
    assert (parallel.stop_reason, parallel.generations, parallel.candidates_evaluated, parallel.tokens_in) == (
        sequential.stop_reason, sequential.generations, sequential.candidates_evaluated, sequential.tokens_in)
    assert parallel.best["id"] == sequential.best["id"]
    counted = {r[0] for r in archive(tmp_path / "one")}
    assert counted <= {r[0] for r in archive(tmp_path / "three")}


def test_parallel_candidate_budget_is_exact(task, tmp_path):
    evaluator = ScriptedEvaluator(delay_s=0.005)
    result = search(task, tmp_path / "run", Budget(candidates=21, plateau_generations=None), evaluator=evaluator,
                    config=SearchConfig(parallel_evaluations=4))
    assert result.stop_reason == "budget_candidates"
    assert result.candidates_evaluated == 21 == len(evaluator.calls) == len(read_jsonl(tmp_path / "run" /
                                                                                     "archive.jsonl"))


class RepeatingProposer(ScriptedProposer):
    """Every reply repeats its first candidate: duplicates arrive while the original is still judged."""

    def propose(self, request):
        proposals = super().propose(request)
        return [proposals[0], proposals[0]] if proposals and not proposals[0].error else proposals


def test_a_duplicate_in_flight_is_judged_once_from_the_original(task, tmp_path):
    evaluator = ScriptedEvaluator(delay_s=0.01)
    result = search(task, tmp_path / "run", Budget(candidates=8, plateau_generations=None),
                    proposer=RepeatingProposer(), evaluator=evaluator, config=SearchConfig(parallel_evaluations=4))
    records = read_jsonl(tmp_path / "run" / "archive.jsonl")
    duplicates = [r for r in records if r["kind"] == "duplicate"]
    assert duplicates and result.duplicates == len(duplicates)
    by_id = {r["id"]: r for r in records}
    for dup in duplicates:
        original = by_id[dup["duplicate_of"]]
        assert original["kind"] == "evaluated" and dup["fitness"] == original["fitness"]
    assert len(evaluator.calls) == len({r["source_sha"] for r in records if r["kind"] == "evaluated"})
