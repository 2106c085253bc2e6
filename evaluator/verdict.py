"""Verdicts: what the evaluator concluded about one candidate, and why.

A verdict is plain data (JSON-serialisable) so that the CLI, the search archive, the bot's report and
the Celery result all carry the same object. ``reason`` is one of :class:`Reason`; ``detail`` is a
sentence a person can act on (which case, which seed, which line, what to do next).
"""

from __future__ import annotations

import enum
import json
from dataclasses import asdict, dataclass, field
from typing import Any


class Reason(str, enum.Enum):
    """Why a candidate was accepted or rejected (the CLI contract's ``reason`` field)."""

    OK = "ok"
    COMPILE_ERROR = "compile_error"
    INCORRECT = "incorrect"
    STATIC_VIOLATION = "static_violation"
    CHEAT_SUSPECTED = "cheat_suspected"
    CRASHED = "crashed"
    TIMEOUT = "timeout"
    TOO_SLOW = "too_slow"


class EvalSetupError(Exception):
    """The evaluation itself could not run (bad task file, missing dependency): exit status 2.

    The message names the file and the problem and says what to do next.
    """


class NeedsGPU(EvalSetupError):
    """This candidate can only be run on a GPU (a CUDA or load_inline kernel evaluated with ``--device cpu``);
    a CUDA compile check has passed where one was possible. Other candidates of the same task may still run."""


@dataclass
class Verdict:
    """The evaluator's conclusion about one candidate, with the evidence behind it."""

    verdict: str  # "accepted" | "rejected"
    reason: str  # a Reason value
    detail: str
    task: str = ""
    candidate: str = ""
    device: str = "cpu"
    backend: str = "unknown"
    static: dict[str, Any] = field(default_factory=dict)
    correctness: dict[str, Any] = field(default_factory=dict)
    timing: dict[str, Any] | None = None
    timing_note: str = ""
    flags: list[str] = field(default_factory=list)
    overhead: dict[str, float] = field(default_factory=dict)
    resources: dict[str, dict[str, int]] = field(default_factory=dict)  # per kernel: registers, spills, ...
    environment: dict[str, Any] = field(default_factory=dict)
    logs: str = ""

    @property
    def accepted(self) -> bool:
        return self.verdict == "accepted"

    @classmethod
    def reject(cls, reason: Reason, detail: str, **evidence: Any) -> Verdict:
        """A rejected verdict for ``reason`` with a human-readable ``detail``."""
        return cls(verdict="rejected", reason=reason.value, detail=detail, **evidence)

    @classmethod
    def accept(cls, detail: str, **evidence: Any) -> Verdict:
        """An accepted verdict (correct, clean, and, on GPU, timed)."""
        return cls(verdict="accepted", reason=Reason.OK.value, detail=detail, **evidence)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=str)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)
