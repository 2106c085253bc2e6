"""The search confirms its winner in a plain process (evaluator/plain_run.py): a kernel right only under the
verifier's instrumentation is not published; an honest winner carries the plain run in its verdict."""

from pathlib import Path

from kernelevo.search.api import run_search
from kernelevo.search.budget import Budget
from kernelevo.search.config import SearchConfig
from kernelevo.search.proposer import Proposal, ProposalRequest

DATA = Path(__file__).parent / "data"
GOOD = (DATA / "scale_add_good.py").read_text()
# Right where the guards' warm-up imported torch.utils.cpp_extension (the guarded process), wrong elsewhere.
TELL = GOOD.replace("        self.alpha = alpha\n",
                    "        self.alpha = alpha if getattr(torch.utils, 'cpp_extension', None) is not None else 1.0\n")


class OneSource:
    name = "one-source"

    def __init__(self, source: str):
        self.source = source

    def propose(self, request: ProposalRequest) -> list[Proposal]:
        return [Proposal(source=self.source, strategy="block1024", operator=request.operator)]


def _search(tmp_path: Path, source: str):
    return run_search(DATA / "scale_add.py", op_id="scale_add", backend="triton", proposer=OneSource(source),
                      budget=Budget(candidates=1, plateau_generations=None), device="cpu", run_dir=tmp_path / "run",
                      seed=3, config=SearchConfig(islands=1, generation_size=1))


def test_a_winner_right_only_when_observed_is_not_published(tmp_path):
    assert TELL != GOOD
    result = _search(tmp_path, TELL)
    assert result.candidates_accepted == 1  # the search's own (guarded) evaluation accepted it
    assert result.best is None
    assert "plain-process run" in result.note and "[plain process]" in result.note
    assert "plain_run_s" in result.phases  # the winner's plain run is reported as a phase of its own


def test_an_honest_winner_carries_the_plain_run(tmp_path):
    result = _search(tmp_path, GOOD)
    assert result.best is not None
    checks = result.best["verdict"]["correctness"]["checks"]
    assert any("plain process" in c for c in checks)
    phases = {c["phase"] for case in result.best["verdict"]["correctness"]["cases"] for c in case["checks"]}
    assert {"correctness", "plain process"} <= phases
    overhead = result.best["verdict"]["overhead"]  # where the plain run's time went, phase by phase
    phases = set(overhead["plain_phases"])
    assert {p for p in phases if not p.startswith("startup.")} == {
        "near_duplicates_s", "stage_s", "ready_s", "load_s", "calls_s", "judge_s",
        # the plain process's own account of its calls
        "calls.load_inputs_s", "calls.stage_s", "calls.forward_s", "calls.hand_over_s", "calls.end_s"}
    assert "startup.import_torch_s" in phases  # and of its start-up (measured while it started ahead)
    assert overhead["plain_calls"] >= overhead["plain_judged_calls"] > 0
