"""How full the search loop keeps its evaluation slots, measured apart from the verifier.

The real ``SearchLoop`` runs with the test suite's scripted proposer and an evaluator that only sleeps,
each candidate for a time drawn (deterministically, from its source) from the spread of per-candidate
evaluation times the H200 bench recorded (2.9-4.9 s median per op, scaled down by ``--scale``). The
sleeps use no CPU, so on any machine the result shows what the loop's own scheduling (generation
boundaries, results absorbed in submission order) leaves idle: the "eval busy" of the H200 table
divided by the slots it had.

    python bench/loop_bench.py --out bench/results/loop_vm.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "search")]

from search_doubles import ScriptedEvaluator, ScriptedProposer  # noqa: E402

# Per-candidate evaluation seconds on the H200 (bench/results/search_h200: medians 2.9-4.9 s per op,
# single candidates from 2 s to 8 s); drawn uniformly from these, then scaled.
H200_EVAL_S = (2.0, 2.5, 2.9, 3.0, 3.5, 3.6, 3.7, 3.8, 4.8, 4.9, 6.0, 8.0)


class SleepingEvaluator(ScriptedEvaluator):
    """The scripted evaluator's verdicts after a sleep as long as a real evaluation, scaled."""

    def __init__(self, scale: float) -> None:
        super().__init__(timed=True)
        self.scale = scale
        self.busy_s = 0.0

    def evaluate_source(self, source: str, name: str):
        digest = hashlib.sha256(source.encode()).digest()
        self.delay_s = H200_EVAL_S[digest[0] % len(H200_EVAL_S)] * self.scale
        with self._lock:
            self.busy_s += self.delay_s
        return super().evaluate_source(source, name)


def measure(slots: int, candidates: int, generation_size: int, scale: float, seed: int) -> dict:
    """One search of ``candidates`` with ``slots`` evaluations in flight: slot occupancy and throughput."""
    from kernelevo.search.api import run_search
    from kernelevo.search.budget import Budget
    from kernelevo.search.config import SearchConfig

    evaluator = SleepingEvaluator(scale)
    with tempfile.TemporaryDirectory() as tmp:
        task = Path(tmp) / "task.py"
        task.write_text("# scripted: the evaluator does not read it\n")
        started = time.perf_counter()
        result = run_search(task, op_id="loop", backend="triton", proposer=ScriptedProposer(delay_s=0.01 * scale),
                            budget=Budget(candidates=candidates, plateau_generations=None), device="cuda",
                            run_dir=Path(tmp) / "run", seed=seed, evaluator=evaluator,
                            config=SearchConfig(parallel_evaluations=slots, generation_size=generation_size))
        wall = time.perf_counter() - started
    return {"slots": slots, "candidates": result.candidates_evaluated, "generation_size": generation_size,
            "wall_s": round(wall, 3), "evaluation_s": round(evaluator.busy_s, 3),
            "occupancy": round(evaluator.busy_s / (wall * slots), 3),
            "candidates_per_min_unscaled": round(result.candidates_evaluated / (wall / scale) * 60, 1),
            "most_in_flight": evaluator.most_in_flight}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slots", default="1,3,6", help="evaluations in flight to compare")
    parser.add_argument("--candidates", type=int, default=48)
    parser.add_argument("--generation-size", type=int, default=8)
    parser.add_argument("--scale", type=float, default=0.05, help="evaluation seconds x this (0.05: 3 s -> 0.15 s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    import torch

    rows = [measure(int(n), args.candidates, args.generation_size, args.scale, args.seed)
            for n in args.slots.split(",")]
    print("| slots | occupancy | candidates/min (H200 evaluation times) | most in flight |")
    print("|---|---|---|---|")
    for row in rows:
        print(f"| {row['slots']} | {row['occupancy']:.0%} | {row['candidates_per_min_unscaled']:.1f} "
              f"| {row['most_in_flight']} |")
    record = {"benchmark": "search loop slot occupancy",
              "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "machine": "CPU (sleeping evaluator)",
              "versions": {"python": sys.version.split()[0], "torch": torch.__version__},
              "eval_s_drawn_from": H200_EVAL_S, "scale": args.scale, "seed": args.seed, "rows": rows}
    if args.out:
        args.out.write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
