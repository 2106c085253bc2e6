"""Test doubles for the search loop: a scripted proposer and a scripted evaluator.

The proposer writes tiny "candidate modules" whose quality is a number in the source; the evaluator
reads it back, so the loop's mechanics (selection, migration, budgets, resume) can be tested in
milliseconds without torch. Both are deterministic functions of their inputs.
"""

from __future__ import annotations

import random
import re
import threading
import time
from pathlib import Path

from evaluator.verdict import Verdict
from kernelevo.search.proposer import Proposal, ProposalRequest

QUALITY = re.compile(r"^QUALITY = (?P<q>-?[0-9.]+)$", re.M)


def candidate_source(quality: float, tag: str) -> str:
    return f"# scripted candidate {tag}\nQUALITY = {quality:.6f}\n"


def quality_of(source: str) -> float:
    match = QUALITY.search(source)
    return float(match["q"]) if match else -1.0


class ScriptedProposer:
    """Improves on its parents by a seeded random step; some proposals are broken (quality <= 0)."""

    name = "scripted"

    def __init__(self, delay_s: float = 0.0, tokens: tuple[int, int] = (100, 50), model: str = "gpt-4o",
                 break_every: int = 5, strategies: tuple[str, ...] = ("rowwise", "tiled")) -> None:
        self.delay_s, self.tokens, self.model = delay_s, tokens, model
        self.break_every, self.strategies = break_every, strategies
        self.requests: list[ProposalRequest] = []
        self._lock = threading.Lock()

    def propose(self, request: ProposalRequest) -> list[Proposal]:
        with self._lock:
            self.requests.append(request)
        if self.delay_s:
            time.sleep(self.delay_s)
        rng = random.Random(request.seed)
        base = max((p.fitness for p in request.parents), default=0.5)
        quality = base + rng.uniform(-0.2, 0.3) if request.operator != "repair" else 0.6
        if self.break_every and rng.randrange(self.break_every) == 0:
            quality = -1.0
        tag = f"{request.operator}-{request.seed}"
        return [Proposal(
            source=candidate_source(quality, tag), strategy=self.strategies[request.seed % len(self.strategies)],
            operator=request.operator, backend=request.backend, model=self.model,
            tokens_in=self.tokens[0], tokens_out=self.tokens[1],
        )]


class ScriptedEvaluator:
    """Accepts candidates with QUALITY > 0 and reports that quality as the geomean speedup."""

    def __init__(self, timed: bool = True, delay_s: float = 0.0) -> None:
        self.timed, self.delay_s = timed, delay_s
        self.calls: list[str] = []
        self.baselines = {"cases": [{"eager": {"median_ms": 1.0}}]} if timed else None
        self._lock = threading.Lock()
        self.in_flight = self.most_in_flight = 0  # evaluations running at once (the loop may overlap them)

    def evaluate_source(self, source: str, name: str) -> Verdict:
        with self._lock:
            self.calls.append(name)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.delay_s:
                time.sleep(self.delay_s)
            return self._verdict(source, name)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _verdict(self, source: str, name: str) -> Verdict:
        quality = quality_of(source)
        if quality <= 0:
            return Verdict(verdict="rejected", reason="incorrect", detail=f"{name}: case 0, seed 1: max_abs_err=3.2")
        timing = None
        if self.timed:
            timing = {"cases": [], "geomean_speedup_vs_best": quality,
                      "geomean_speedup_vs_eager": quality * 4, "geomean_speedup_vs_compile": quality * 1.1}
        return Verdict(verdict="accepted", reason="ok", detail="correct", timing=timing, backend="triton")


class KnownGoodProposer:
    """For end-to-end runs on ``data/scale_add.py``: a correct Triton kernel at a few block sizes,
    and (for ``repair`` and every third fresh request) a kernel with the wrong math."""

    name = "known-good"
    GOOD = (Path(__file__).parent / "data" / "scale_add_good.py").read_text()

    def propose(self, request: ProposalRequest) -> list[Proposal]:
        block = (256, 512, 1024, 2048)[request.seed % 4]
        source = self.GOOD.replace("BLOCK = 1024", f"BLOCK = {block}")
        if request.seed % 3 == 0:
            source = source.replace("alpha * x + y", "alpha * x - y")  # wrong: the verifier must reject it
        return [Proposal(source=source, strategy=f"block{block}", operator=request.operator)]
