"""A search with the scripted doubles, run as its own process so that tests can kill -9 it.

Usage: python scripted_run.py TASK RUN_DIR [--resume]
"""

import sys
from pathlib import Path

from search_doubles import ScriptedEvaluator, ScriptedProposer

from kernelevo.search.api import run_search
from kernelevo.search.budget import Budget
from kernelevo.search.config import SearchConfig

BUDGET = Budget(candidates=40, plateau_generations=None)
CONFIG = SearchConfig(islands=2, generation_size=6, migration_interval=2, proposal_workers=3)


def main(argv: list[str]) -> None:
    task, run_dir = Path(argv[0]), Path(argv[1])
    delay = float(argv[3]) if len(argv) > 3 else 0.0
    run_search(task, op_id="demo", backend="triton", proposer=ScriptedProposer(delay_s=delay / 2),
               budget=BUDGET, device="cuda", run_dir=run_dir, seed=11, config=CONFIG,
               evaluator=ScriptedEvaluator(delay_s=delay), resume="--resume" in argv)


if __name__ == "__main__":
    main(sys.argv[1:])
