"""The shape of a search and what it needs from the verifier (plain types shared by the loop and callers)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class SearchConfig:
    """Shape of the search (not its budget)."""

    islands: int = 4
    generation_size: int = 8
    island_capacity: int = 16
    migration_interval: int = 3  # generations between ring migrations
    lookahead: bool = True  # request generation g+1 while generation g is evaluated
    proposal_workers: int = 4  # proposer calls in flight
    parallel_evaluations: int = 0  # candidates judged at once; 0: 3 on a GPU, 1 on CPU (where cores are few)

    def evaluations_in_flight(self, device: str) -> int:
        """How many candidates to judge at once on ``device`` (the GPU idles through the checks)."""
        if self.parallel_evaluations > 0:
            return self.parallel_evaluations
        return 3 if device == "cuda" else 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchConfig:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


class Evaluator(Protocol):
    """What the loop needs from the verifier (an ``EvaluationSession`` or a test double)."""

    def evaluate_source(self, source: str, name: str) -> Any:
        """Judge one candidate module; returns a Verdict (or anything with ``to_dict()``)."""
        ...

    # Optional: ``prefetch(source)`` starts preparing the candidate that will be judged next.
