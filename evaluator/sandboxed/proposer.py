"""The offline proposer's process: it traces the task (which imports the user's op) inside a sandbox.

The search process only ever sees the proposals as text (:class:`kernelevo.search.offline.sandboxed.
SandboxedOfflineProposer` is its client); tracing, which runs the op's module and ``get_inputs``, happens
here, where nothing of value can be reached.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any


class ProposerRunner:
    """Serves ``propose`` requests with the built-in offline proposer."""

    def __init__(self, private: Path) -> None:
        from kernelevo.search.offline.proposer import OfflineProposer

        self.proposer = OfflineProposer()

    def propose(self, req: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        from kernelevo.search.proposer import Parent, ProposalRequest

        data = dict(req["request"])
        data["parents"] = [Parent(**p) for p in data.get("parents") or []]
        proposals = self.proposer.propose(ProposalRequest(**data))
        return {"ok": True, "proposals": [dataclasses.asdict(p) for p in proposals]}

    def strategies(self, req: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        return {"ok": True, "strategies": self.proposer.strategies(req["task_source"])}

    def unsupported(self, req: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """The task's ATen ops the offline generator does not lower, traced here (the task imports user code)."""
        return {"ok": True, "unsupported": [u.model_dump() for u in self.proposer.unsupported(req["task_source"])]}
