"""What the parts of the search loop share: the run's inputs, its state and its clock.

:class:`~kernelevo.search.engine.SearchLoop` is assembled from parts (:mod:`~kernelevo.search.planning`,
:mod:`~kernelevo.search.judging`); each part reads the attributes declared here, which ``SearchLoop.__init__``
sets, so that every part is typed on its own.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from kernelevo.search.budget import Budget
from kernelevo.search.config import Evaluator, SearchConfig
from kernelevo.search.loop_state import LoopState
from kernelevo.search.population import Population
from kernelevo.search.pricing import Price
from kernelevo.search.proposer import Proposer
from kernelevo.search.rundir import RunDir


class LoopCore:
    """The loop's shared attributes (declared, not set: ``SearchLoop.__init__`` sets them) and its run time."""

    # The run's inputs.
    op_id: str
    task_source: str
    proposer: Proposer
    evaluator: Evaluator
    run_dir: RunDir
    budget: Budget
    config: SearchConfig
    backend: str  # "triton", "cuda" or "any" (islands alternate)
    hardware: dict[str, Any]
    prices: dict[str, Price]
    slug: str  # the op id as a file-name part (candidate names)
    clock: Callable[[], float]  # monotonic seconds: durations
    wall: Callable[[], float]  # epoch seconds: timestamps in records

    # Its state (rebuilt identically on replay).
    rng: random.Random
    population: Population
    state: LoopState
    seen: dict[str, dict[str, Any]]  # source sha -> first candidate record
    logged_slots: dict[str, dict[str, Any]]  # slot id -> reply record already in the run directory
    logged_candidates: dict[str, dict[str, Any]]  # candidate id -> record already in the run directory
    planned_pending: int  # slots planned whose replies have not been consumed yet
    prior_elapsed: float  # run time of earlier sessions of a resumed run
    session_start: float  # ``clock()`` when this session started

    def elapsed(self) -> float:
        """Run time so far, earlier sessions of a resumed run included."""
        return self.prior_elapsed + (self.clock() - self.session_start)
