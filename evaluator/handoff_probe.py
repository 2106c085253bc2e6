"""How a session's candidate outputs travel, decided before any candidate exists (parent side).

On CUDA the outputs go to the reference process as VMM allocations exported as file descriptors
(:mod:`evaluator.sandboxed.handoff`) where the machine allows it, else as files. Whether it allows it is
decided here, once per session, by the harness alone: a fresh candidate process, before anything of a
candidate is written into it, hands one tensor of the parent's making over exactly as outputs go, and the
reference process checks it byte for byte. A candidate's process can afterwards report an export failure or
send a descriptor the reference cannot map; that changes how that one candidate's outputs travel (files), never
the session's mode: no candidate can make the evaluations after it slower, or make them take a path it chose.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict

from evaluator import processes
from evaluator.calls import sent_for

PROBE_BYTES = (3 << 20) + 5  # not a multiple of any allocation granularity: the rounding is exercised too


class HandoffDecision(BaseModel):
    """The session's output hand-off (``vmm`` or ``file``) and, for files on CUDA, why."""

    model_config = ConfigDict(frozen=True)

    mode: str
    why: str = ""

    def describe(self) -> str:
        """One line for the session's environment record (reports, logs)."""
        return self.mode if not self.why else f"{self.mode} ({self.why})"


def probe_request(key: int, seed: int) -> dict[str, Any]:
    """What the candidate process is asked to hand over (the same request shape reaches the reference)."""
    return {"op": "handoff_probe", "key": key, "seed": seed, "nbytes": PROBE_BYTES}


def decide(candidate_reply: dict[str, Any], sent: dict[str, Any],
           reference_reply: dict[str, Any] | None) -> HandoffDecision:
    """The decision from the two processes' answers (pure: the replies are data)."""
    if "vmm" not in sent:
        why = (candidate_reply.get("export_failed") or candidate_reply.get("message")
               or "the candidate process did not export the probe")
        return HandoffDecision(mode="file", why=f"exporting a CUDA VMM allocation failed: {str(why)[:300]}")
    if reference_reply is None or not reference_reply.get("works"):
        problem = (reference_reply or {}).get("problem") or "no answer"
        return HandoffDecision(mode="file", why=f"the reference process could not import the probe allocation: "
                                                f"{str(problem)[:300]}")
    return HandoffDecision(mode="vmm")


def probe(take_worker: Callable[[], processes.Worker],
          reference_request: Callable[[dict[str, Any], float], dict[str, Any]],
          timeout: float) -> HandoffDecision:
    """Run the probe through a fresh candidate process (``take_worker``) and the reference; the process is killed
    afterwards (it has run harness code only, but nothing of it is reused)."""
    worker = take_worker()
    key, seed = secrets.randbits(62), secrets.randbits(31)
    try:
        worker.wait_ready(timeout)
        reply = worker.request(probe_request(key, seed), timeout)
        sent = sent_for(reply.get("sent") or {}, "probe", worker)  # right after the reply: its descriptors
        answer = None
        if "vmm" in sent:
            answer = reference_request({**probe_request(key, seed), "outputs": [{"name": "probe", "sent": sent}]},
                                       timeout)
        return decide(reply, sent, answer)
    except (processes.WorkerDied, processes.WorkerTimeout, processes.WorkerMemoryExceeded,
            processes.WorkerForgery) as exc:
        return HandoffDecision(mode="file", why=f"the hand-off probe's process failed: {str(exc)[:300]}")
    finally:
        worker.kill()
