"""The offline proposer with the mistakes a language model makes planted in its fresh kernels, and a repair
operator that fixes one mistake at a time: used for the CPU example report, whose offline candidates are all
correct, so that its rejections and the winner's lineage have something to show. Every candidate is still
judged by the real verifier; only the proposals are scripted.

    PYTHONPATH=docs/examples/cpu-rms-norm kernelevo optimize --device cpu --proposer faulty_proposer:FaultyProposer
"""

from __future__ import annotations

import re

from kernelevo.search.offline.sandboxed import SandboxedOfflineProposer
from kernelevo.search.proposer import Proposal, ProposalRequest

# (mistake, fix) pairs, in the order a repair fixes them: a call to a function Triton does not have, then an
# off-by-one mask that leaves each row's last column unwritten.
FAULTS = (
    (re.compile(r"\brsqrt\("), "rsqrtf(", re.compile(r"\brsqrtf\("), "rsqrt("),
    (re.compile(r"< n_cols\b(?! - 1)"), "< n_cols - 1", re.compile(r"< n_cols - 1\b"), "< n_cols"),
)


def plant(source: str) -> str:
    """``source`` with every mistake of :data:`FAULTS` planted once (where its pattern occurs)."""
    for mistake, wrong, _, _ in FAULTS:
        source = mistake.sub(wrong, source, count=1)
    return source


def repair(source: str) -> str | None:
    """``source`` with its first planted mistake fixed; None when it holds none."""
    for _, _, planted, fix in FAULTS:
        if planted.search(source):
            return planted.sub(fix, source, count=1)
    return None


class FaultyProposer:
    """Offline proposals; fresh ones with :data:`FAULTS` planted; ``repair`` fixes a parent's first one."""

    name = "offline-with-planted-faults"
    operators = frozenset({"fresh", "mutate", "tune", "crossover", "repair"})

    def __init__(self) -> None:
        self._offline = SandboxedOfflineProposer()

    def propose(self, request: ProposalRequest) -> list[Proposal]:
        if request.operator == "repair":
            fixed = [(p, repair(p.source)) for p in request.parents[:1]]
            return [Proposal(source=source, strategy=parent.strategy, operator="repair", backend=parent.backend)
                    for parent, source in fixed if source is not None]
        proposals = self._offline.propose(request)
        if request.operator != "fresh":
            return proposals
        return [Proposal(**{**vars(p), "source": plant(p.source)}) for p in proposals]

    def close(self) -> None:
        self._offline.close()
