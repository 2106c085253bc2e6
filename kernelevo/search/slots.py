"""Slots (one proposal request each) and the records the loop writes for them.

Pure helpers: a proposer reply becomes a ``proposals.jsonl`` record (priced from the price table
unless the proposer priced it), and each proposal in it becomes the start of an ``archive.jsonl``
candidate record. Candidate ids follow slots: ``g<generation>-<slot>`` (``.<k>`` for the k-th extra
proposal of a slot), so a replayed plan finds its records again.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import Future
from dataclasses import asdict, dataclass
from typing import Any

from kernelevo.search.pricing import Price, cost_usd
from kernelevo.search.proposer import Proposal

MAX_RAW_REPLY = 20_000


@dataclass
class Slot:
    """One proposal request of a generation, and where its reply comes from (a thread or the log)."""

    id: str
    generation: int
    index: int
    island: int
    operator: str
    backend: str
    parent_ids: list[str]
    future: Future[dict[str, Any]] | None = None
    logged: dict[str, Any] | None = None

    def reply(self) -> dict[str, Any]:
        """The slot's reply record, waiting for the proposer thread if it is still running."""
        if self.logged is not None:
            return self.logged
        if self.future is None:
            raise RuntimeError(f"slot {self.id}: no logged reply and no proposer call (planning left it empty)")
        return self.future.result()


def source_sha(source: str) -> str:
    """Content hash identifying a candidate's source (duplicates are judged once)."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def reply_record(slot: Slot, proposals: list[Proposal], error: str | None, prices: dict[str, Price]) -> dict[str, Any]:
    """The ``proposals.jsonl`` record of one slot: its request and every proposal, priced."""
    replies = []
    for proposal in proposals:
        reply = asdict(proposal)
        reply["raw_reply"] = (reply.get("raw_reply") or "")[:MAX_RAW_REPLY]
        if not reply.get("cost_usd"):
            priced = cost_usd(proposal.model, proposal.tokens_in, proposal.tokens_out, prices)
            reply["cost_usd"] = priced or 0.0
            reply["unpriced"] = priced is None and bool(proposal.tokens_in or proposal.tokens_out)
        replies.append(reply)
    return {
        "slot": slot.id, "generation": slot.generation, "island": slot.island, "operator": slot.operator,
        "backend": slot.backend, "parent_ids": slot.parent_ids, "proposals": replies, "error": error,
    }


def candidate_record(slot: Slot, k: int, proposal: dict[str, Any]) -> dict[str, Any]:
    """The start of the ``archive.jsonl`` record for the ``k``-th proposal of ``slot`` (before judging)."""
    source = proposal.get("source") or ""
    backend = proposal.get("backend") or slot.backend
    strategy = proposal.get("strategy") or ""
    return {
        "id": slot.id if k == 0 else f"{slot.id}.{k}", "slot": slot.id, "generation": slot.generation,
        "island": slot.island, "operator": slot.operator, "parent_ids": slot.parent_ids, "backend": backend,
        "strategy": strategy, "cell": [backend, strategy or "default"], "model": proposal.get("model", ""),
        "tokens_in": proposal.get("tokens_in", 0), "tokens_out": proposal.get("tokens_out", 0),
        "cost_usd": proposal.get("cost_usd", 0.0), "source": source,
        "source_sha": source_sha(source) if source else None,
    }
