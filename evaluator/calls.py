"""Talking to a candidate process and to the reference (parent side): one request, one verdict-shaped failure.

Shared by the correctness protocol (:mod:`evaluator.run_candidate`) and timing (:mod:`evaluator.timing_judge`):
every way a candidate process can fail a request (timeout, death, memory, a refusal) becomes a
:class:`StopEvaluation` carrying the verdict.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evaluator import processes
from evaluator.verdict import EvalSetupError, NeedsGPU, Reason, Verdict

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
    files: Sequence[str] = (),
) -> dict[str, Any]:
    """One request to a candidate process (None: its start-up message; ``already_sent``: only wait for the
    reply; ``files``: opened here read-only and passed as descriptors), turning every failure into a verdict."""
    fds = [os.open(path, os.O_RDONLY | os.O_CLOEXEC) for path in files]
    try:
        if request is None:
            reply = worker.wait_ready(timeout)
        elif already_sent:
            reply = worker.receive(timeout)
        else:
            reply = worker.request(request, timeout, fds)
    except processes.WorkerTimeout as exc:
        what = "starting" if request is None else request["op"]
        slow = ("; on the CPU the Triton interpreter also runs some correct kernels this slowly (a tl.reduce or "
                "tl.associative_scan with a @triton.jit combine function calls Python once per element): try "
                "--device cuda, or a larger --timeout") if evidence.get("device") == "cpu" else ""
        raise StopEvaluation(
            Verdict.reject(
                Reason.TIMEOUT,
                f"the candidate did not finish {what} within "
                f"{timeout:.0f} s (hang or infinite loop?{slow}); its processes were killed",
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
    except processes.WorkerForgery as exc:  # descriptors the harness never sends: the process was rewritten
        raise StopEvaluation(Verdict.reject(Reason.CHEAT_SUSPECTED, str(exc), logs=worker.log_tail(),
                                            **evidence)) from exc
    except processes.WorkerDied as exc:
        raise StopEvaluation(Verdict.reject(Reason.CRASHED, str(exc), logs=worker.log_tail(), **evidence)) from exc
    finally:
        for fd in fds:
            os.close(fd)
    if reply.get("ok", True):
        return reply
    if reply.get("kind") in ("task_error", "setup_error"):
        raise EvalSetupError(reply["message"])
    if reply.get("reason") == "needs_gpu":
        raise NeedsGPU(f"{evidence.get('candidate', 'the candidate')}: {reply.get('message', '')}")
    # the reason comes from the candidate's process: Verdict.reject turns one it does not know into `crashed`
    raise StopEvaluation(Verdict.reject(reply.get("reason", "crashed"), str(reply.get("message", "")),
                                        logs=worker.log_tail(), **evidence))


@dataclass(frozen=True)
class Judged:
    """An output the reference is asked to judge: what the parent knows about it (case, seed, scale, group)
    and how the candidate said it travelled (``sent``)."""

    name: str
    case: int
    seed: int
    distribution: str
    sent: dict[str, Any]
    scale: float | None = None
    group: str | None = None
    varied_init: bool = False  # the model built with other constructor arguments (evaluator.plain_run)
    near: int | None = None  # a near-duplicate input set's key (evaluator.plain_run)
    stepped: int | None = None  # made after the parameters were stepped in place under this key (evaluator.plain_run)

    def request(self) -> dict[str, Any]:
        request = {"name": self.name, "case": self.case, "seed": self.seed, "scale": self.scale, "group": self.group,
                   "sent": self.sent}
        if self.varied_init:
            request["varied_init"] = True
        if self.near is not None:
            request["near"] = self.near
        if self.stepped is not None:
            request["stepped"] = self.stepped
        return request


def reported_phases(reply: dict[str, Any], key: str = "phases") -> dict[str, float]:
    """Where a sandboxed process says a request's time went, for profiling only (it could say anything): at most
    16 named numbers, plus the request loop's own measure of the whole handling (``worker_s``)."""
    raw = reply.get(key)
    phases = {str(k)[:40]: round(float(v), 3) for k, v in list(raw.items())[:16]
              if isinstance(v, (int, float)) and math.isfinite(v)} if isinstance(raw, dict) else {}
    seconds = reply.get("seconds")  # set by the request loop on every reply (the start-up message has none)
    if isinstance(seconds, (int, float)) and math.isfinite(seconds):
        phases["worker_s"] = round(float(seconds), 3)
    return phases


def judge_outputs(session: EvaluationSession, channel: OutputChannel, items: list[Judged],
                  evidence: dict[str, Any], phase: str) -> None:
    """Ask the reference process to judge the outputs; stop with ``incorrect`` (or ``cheat_suspected`` for an
    output changed after it was returned) on any failure. Where the reference cannot map a candidate's VMM
    descriptors, that candidate writes the same outputs as files (the session's mode stays as its probe decided)."""
    request = {"op": "compare", "outputs": [item.request() for item in items], "key": channel.key}
    kinds = {next(iter(item.sent), "file") for item in items}
    evidence["overhead"]["output_handoff"] = "vmm" if "vmm" in kinds else "file"
    timeout = max(session.options.timeout_s, 600)
    try:
        reply = session.reference_request(request, timeout)
        if reply.get("handoff_unavailable"):
            session.note_file_handoff(reply["handoff_unavailable"])
            why = str(reply["handoff_unavailable"])[:200]
            evidence["overhead"]["output_handoff"] = f"file (CUDA VMM hand-off failed: {why})"
            kept = [item.sent for item in items if "kept" in item.sent]
            call_worker(channel.worker, {"op": "save_kept", "outputs": kept}, session.options.timeout_s, evidence)
            items = [Judged(i.name, i.case, i.seed, i.distribution, {"file": i.sent["path"]} if "kept" in i.sent
                            else i.sent, i.scale, i.group) for i in items]
            reply = session.reference_request({**request, "outputs": [item.request() for item in items]}, timeout)
    except (processes.WorkerDied, processes.WorkerTimeout, processes.WorkerMemoryExceeded) as exc:
        session.restart_reference()  # keep the session usable for the next candidate
        raise StopEvaluation(
            Verdict.reject(Reason.CRASHED, f"comparing the candidate's outputs failed: {exc}", **evidence)
        ) from exc
    if not reply.get("ok", False):
        session.restart_reference()
        raise StopEvaluation(Verdict.reject(Reason.CRASHED, "the reference process could not judge the outputs: "
                                            f"{reply.get('message', 'no reason given')}", **evidence))
    by_name = {item.name: item for item in items}
    cases = {c["case"]: c for c in evidence["correctness"]["cases"]}
    failure = None
    for result in reply["results"]:
        item = by_name[result["name"]]
        number = len(cases[item.case]["checks"]) + 1
        entry = {"check": number, "phase": phase, "distribution": item.distribution, "ok": result["ok"],
                 **_errors(result)}
        cases[item.case]["checks"].append(entry)
        if not result["ok"] and failure is None:
            failure = (item, number, result)
    if failure is not None:
        item, number, result = failure
        case = cases[item.case]
        shapes = ", ".join("x".join(map(str, i["shape"])) for i in case["inputs"] if "shape" in i)
        raise StopEvaluation(
            Verdict.reject(
                Reason(result.get("reason", Reason.INCORRECT.value)),
                f"case {item.case} ({shapes}), {item.distribution} inputs, check {number} [{phase}]: "
                f"{result['problem']}",
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


def sent_for(sent: dict[str, Any], name: str, worker: processes.Worker) -> dict[str, Any]:
    """How output ``name`` travelled, as the reference is to be told: the candidate's VMM descriptors with the
    descriptors its reply brought (``fds``, the parent's own, aligned with them; -1 where a descriptor names none
    of them), else the file the parent named (never a path the candidate chose). Call it right after the reply,
    before anything else is asked of ``worker`` (its descriptors last until its next reply)."""
    item = sent.get(name)
    path = str(worker.outbox / f"{name}.pt")
    if isinstance(item, dict) and isinstance(item.get("vmm"), list):
        received = worker.reply_fds()
        fds, used = [], set()
        for descriptor in item["vmm"]:
            index = descriptor.get("fd") if isinstance(descriptor, dict) else None
            if type(index) is int and 0 <= index < len(received) and index not in used:
                fds.append(received[index])
                used.add(index)
            else:  # none, or one named twice (one allocation for two outputs): refused by the reference
                fds.append(-1)
        return {"vmm": item["vmm"], "fds": fds, "kept": item.get("kept"), "path": path}
    return {"file": path}
