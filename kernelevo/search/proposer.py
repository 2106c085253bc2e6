"""The one interface every proposer (LLM, offline, scripted test doubles) implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

OPERATORS = ("fresh", "mutate", "crossover", "repair", "tune")


def operators_of(proposer: object) -> frozenset[str]:
    """The operators a proposer can apply (its ``operators`` attribute; all of them when it names none): the
    search plans no slot a proposer can only refuse (the offline proposer cannot repair a kernel)."""
    declared = getattr(proposer, "operators", None)
    known = frozenset(OPERATORS)
    return known if declared is None else (frozenset(declared) & known) or frozenset({"fresh"})


@dataclass
class Parent:
    """A candidate the proposer should build on, with the evaluator's feedback about it."""

    source: str
    fitness: float = 0.0
    feedback: str = ""  # specific and trimmed: compile errors, failing case/seed, timings vs baselines
    verdict: dict[str, Any] | None = None
    strategy: str = ""
    backend: str = "triton"


@dataclass
class ProposalRequest:
    """What the loop asks a proposer for: one operator applied to zero or more parents."""

    op_name: str
    task_source: str  # the KernelBench-format task (Model, get_inputs, get_init_inputs)
    operator: str = "fresh"  # one of OPERATORS
    parents: list[Parent] = field(default_factory=list)
    backend: str = "triton"  # "triton" | "cuda"
    hardware: dict[str, Any] = field(default_factory=dict)  # facts read from the device
    seed: int = 0
    count: int = 1  # how many proposals are wanted


@dataclass
class Proposal:
    """One candidate module's source and what it cost to get it."""

    source: str
    strategy: str = ""  # a MAP-Elites cell coordinate, e.g. "fused-rowwise", "tiled"
    operator: str = "fresh"
    backend: str = "triton"
    model: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    raw_reply: str = ""
    error: str | None = None  # set when no code could be extracted (the loop records and moves on)


class Proposer(Protocol):
    """Writes candidate kernels. Implementations must be safe to call from several threads. One that holds calls
    open for long (a process, a network request) may also define ``abort()``: make the calls in flight return now
    (the run was interrupted; see :func:`abort_calls`)."""

    name: str

    def propose(self, request: ProposalRequest) -> list[Proposal]:
        """Return up to ``request.count`` proposals (possibly fewer, never raising for bad replies)."""
        ...


def abort_calls(proposer: object) -> None:
    """An interrupted run (Ctrl-C) must not wait for proposer calls in flight: the interpreter joins the threads
    making them before it exits, so a proposer blocked on its process would hold the exit for its whole timeout.
    Calls the proposer's ``abort()`` where it has one."""
    abort = getattr(proposer, "abort", None)
    if callable(abort):
        abort()
