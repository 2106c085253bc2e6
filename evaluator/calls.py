"""Talking to a candidate process and to the reference (parent side): one request, one verdict-shaped failure.

Shared by the correctness protocol (:mod:`evaluator.run_candidate`) and timing (:mod:`evaluator.timing_judge`):
every way a candidate process can fail a request (timeout, death, memory, a refusal) becomes a
:class:`StopEvaluation` carrying the verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evaluator import processes
from evaluator.verdict import EvalSetupError, Reason, Verdict

if TYPE_CHECKING:
    from evaluator.session import EvaluationSession


class StopEvaluation(Exception):
    def __init__(self, verdict: Verdict):
        self.verdict = verdict


@dataclass(frozen=True)
class OutputChannel:
    """How one evaluation's candidate process hands outputs to the reference (:mod:`evaluator.sandboxed.handoff`):
    the process, and the fingerprint key drawn for this evaluation alone."""

    worker: processes.Worker
    key: int

    def request(self, session: EvaluationSession) -> dict[str, Any]:
        return {"mode": session.handoff_mode, "key": self.key}


def call_worker(
    worker: processes.Worker,
    request: dict[str, Any] | None,
    timeout: float,
    evidence: dict[str, Any],
    already_sent: bool = False,
) -> dict[str, Any]:
    """One request to the candidate process (None: its start-up message; ``already_sent``: only wait for
    the reply), turning every failure into a verdict."""
    try:
        if request is None:
            reply = worker.wait_ready(timeout)
        elif already_sent:
            reply = worker.receive(timeout)
        else:
            reply = worker.request(request, timeout)
    except processes.WorkerTimeout as exc:
        what = "starting" if request is None else request["op"]
        raise StopEvaluation(
            Verdict.reject(
                Reason.TIMEOUT,
                f"the candidate did not finish {what} within "
                f"{timeout:.0f} s (hang or infinite loop?); its processes were killed",
                logs=worker.log_tail(),
                **evidence,
            )
        ) from exc
    except processes.WorkerMemoryExceeded as exc:
        raise StopEvaluation(
            Verdict.reject(
                Reason.CRASHED, f"the candidate process {exc} and was killed", logs=worker.log_tail(), **evidence
            )
        ) from exc
    except processes.WorkerDied as exc:
        raise StopEvaluation(Verdict.reject(Reason.CRASHED, str(exc), logs=worker.log_tail(), **evidence)) from exc
    if reply.get("ok", True):
        return reply
    if reply.get("kind") in ("task_error", "setup_error"):
        raise EvalSetupError(reply["message"])
    reason = Reason(reply.get("reason", "crashed"))
    raise StopEvaluation(Verdict.reject(reason, reply.get("message", ""), logs=worker.log_tail(), **evidence))


def judge_outputs(
    session: EvaluationSession, channel: OutputChannel, outputs: list[dict[str, Any]], evidence: dict[str, Any],
    phase: str,
) -> None:
    """Ask the reference process to compare the outputs the candidate sent; stop with ``incorrect`` (or
    ``cheat_suspected`` for an output changed after it was returned) on any failure. Where CUDA IPC
    turns out not to work, the candidate writes the same outputs as files and the session keeps to files."""
    request = {"op": "compare", "outputs": outputs, "key": channel.key}
    evidence["overhead"]["output_handoff"] = "ipc" if any("ipc" in item for item in outputs) else "file"
    try:
        reply = session.reference_request(request, max(session.options.timeout_s, 600))
        if reply.get("handoff_unavailable"):
            session.use_file_handoff(reply["handoff_unavailable"])
            evidence["overhead"]["output_handoff"] = f"file (CUDA IPC failed: {reply['handoff_unavailable'][:200]})"
            resent = call_worker(channel.worker, {"op": "save_kept", "outputs": outputs}, session.options.timeout_s,
                                 evidence)
            reply = session.reference_request({**request, "outputs": resent["outputs"]},
                                              max(session.options.timeout_s, 600))
    except (processes.WorkerDied, processes.WorkerTimeout, processes.WorkerMemoryExceeded) as exc:
        session.restart_reference()  # keep the session usable for the next candidate
        raise StopEvaluation(
            Verdict.reject(Reason.CRASHED, f"comparing the candidate's outputs failed: {exc}", **evidence)
        ) from exc
    cases = {c["case"]: c for c in evidence["correctness"]["cases"]}
    failure = None
    for result in reply["results"]:
        entry = {"seed": result["seed"], "phase": phase, "ok": result["ok"], **_errors(result)}
        cases[result["case"]]["seeds"].append(entry)
        if not result["ok"] and failure is None:
            failure = result
    if failure is not None:
        case = cases[failure["case"]]
        shapes = ", ".join("x".join(map(str, i["shape"])) for i in case["inputs"] if "shape" in i)
        raise StopEvaluation(
            Verdict.reject(
                Reason(failure.get("reason", Reason.INCORRECT.value)),
                f"case {failure['case']} ({shapes}), seed {failure['seed']} [{phase}]: {failure['problem']}",
                **evidence,
            )
        )


def _errors(result: dict[str, Any]) -> dict[str, Any]:
    outs = result.get("outputs") or []

    def worst(key: str) -> float | None:
        values = [o.get(key) for o in outs if o.get(key) is not None]
        return max(values) if values else None

    return {"max_abs_err": worst("max_abs_err"), "max_rel_err": worst("max_rel_err"), "rel_l2_err": worst("rel_l2_err")}


def geomean(values: list[float]) -> float | None:
    """Geometric mean of positive values (None when there are none)."""
    positive = [v for v in values if v and v > 0]
    if not positive:
        return None
    return math.exp(sum(math.log(v) for v in positive) / len(positive))
