"""One candidate's way through its fresh process: load, correctness calls, judgement, replay, timing.

Whatever happens in the candidate process (an exception, a segfault, ``os._exit(0)``, a hang, a memory
blow-up) becomes a verdict with the matching reason; the session then moves on.
"""

from __future__ import annotations

import math
import random
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluator import sandbox
from evaluator.verdict import EvalSetupError, NeedsGPU, Reason, Verdict

if TYPE_CHECKING:
    from evaluator.session import EvaluationSession


CHECKS = [
    "static AST checks",
    "runtime guards (audit hook, torch-op recorder, launch counter, patch and thread detection)",
    "inputs generated before the candidate is imported",
    "candidate runs first on fresh inputs",
    "NaN-poisoned allocations",
    "sentinel guard regions around inputs",
    "inputs unchanged after each call",
    "outputs are plain tensors that alias no input or earlier output",
    "three identical runs agree bitwise",
    "new values in the same input storage give new answers",
    "float64 reference in a separate process",
    "per-dtype tolerance + relative error + not-constant + NaN/Inf positions",
    "benchmark-like replay calls judged",
]


class StopEvaluation(Exception):
    def __init__(self, verdict: Verdict):
        self.verdict = verdict


@dataclass(frozen=True)
class OutputChannel:
    """How one evaluation's candidate process hands outputs to the reference (:mod:`evaluator.handoff`):
    the process, and the fingerprint key drawn for this evaluation alone."""

    worker: sandbox.Worker
    key: int

    def request(self, session: EvaluationSession) -> dict[str, Any]:
        return {"mode": session.handoff_mode, "key": self.key}


def load_request(session: EvaluationSession, path: Path) -> dict[str, Any]:
    """The request that makes a candidate process ready to run ``path`` (inputs loaded, module imported)."""
    return {
        "op": "load",
        "task": str(session.task_path),
        "candidate": str(path),
        "device": session.device,
        "small": session.small,
        "seeds": session.seeds,
        "init_seed": session.init_seed,
        "allow_ops": list(session.options.allow_torch_ops),
        "runtime_guards": True,
        "extension_root": str(session.cache_dir / "torch_extensions"),
        "inputs_dir": session.inputs_dir,
        "expected": [{"case": c["case"], "outputs": c["outputs"]} for c in session.plan["cases"]],
    }


def run_candidate(session: EvaluationSession, path: Path, folder: Path, evidence: dict[str, Any],
                  prefetched: sandbox.Worker | None = None) -> Verdict:
    """Run the dynamic part of the protocol for one candidate file (``prefetched``: a process that was
    sent the load request earlier, so that its import overlapped the previous candidate)."""
    options = session.options
    overhead: dict[str, float] = {}
    evidence["overhead"] = overhead
    evidence["correctness"] = {
        "seeds": session.seeds,
        "init_seed": session.init_seed,
        "reference_precision": session.plan.get("reference_precision"),
        "checks": list(_checks(session)),
        "cases": _case_skeleton(session),
    }
    t0 = time.perf_counter()
    if prefetched is None:
        worker = session.pool.take()
        worker.send(load_request(session, path))
    else:
        worker = prefetched
    overhead["prefetched"] = prefetched is not None
    try:
        ready = call_worker(worker, None, options.timeout_s, evidence)
        overhead["process_startup_s"] = round(float(ready.get("startup_s", 0.0)), 3)
        overhead["waited_for_process_s"] = round(time.perf_counter() - t0, 3)
        t = time.perf_counter()
        call_worker(worker, {"op": "load"}, options.timeout_s, evidence, already_sent=True)
        overhead["load_s"] = round(time.perf_counter() - t, 3)
        if session.device == "cpu" and evidence.get("backend") == "cuda":
            # NVRTC compiled it at import (a compile error would have stopped above): that is all a CPU can check.
            raise NeedsGPU(f"{evidence['candidate']}: the CUDA kernels compile (NVRTC), but running them needs "
                                 "a GPU: evaluate with --device cuda")
        channel = OutputChannel(worker, secrets.randbits(62))
        t = time.perf_counter()
        with session.gpu.shared():  # other evaluations may check at the same time, none is timing
            checked = call_worker(
                worker,
                {
                    "op": "check",
                    "outdir": str(folder / "outputs"),
                    "nondeterministic_ok": session.plan.get("nondeterministic_ok", False),
                    "handoff": channel.request(session),
                },
                options.timeout_s,
                evidence,
            )
        overhead["check_s"] = round(time.perf_counter() - t, 3)
        overhead["check_phases"] = checked.get("phases", {})
        evidence["resources"] = checked.get("resources") or {}
        t = time.perf_counter()
        judge_outputs(session, channel, checked["outputs"], evidence, "correctness")
        overhead["judge_s"] = round(time.perf_counter() - t, 3)
        if session.device == "cpu":
            rng = random.Random(session.init_seed + len(evidence["candidate"]))
            replay_seeds = [rng.randrange(1 << 31) for _ in range(2)]
            replayed = call_worker(
                worker,
                {"op": "replay", "outdir": str(folder / "outputs"), "seeds": replay_seeds,
                 "handoff": channel.request(session)},
                options.timeout_s,
                evidence,
            )
            judge_outputs(session, channel, replayed["outputs"], evidence, "replay")
            return Verdict.accept(_accept_detail(session), **evidence)
        from evaluator.timing_judge import time_candidate

        return time_candidate(session, channel, folder, evidence)
    except StopEvaluation as stop:
        return stop.verdict
    finally:
        overhead["peak_host_memory_mb"] = round(worker.peak_rss_mb, 1)
        evidence_logs = worker.log_tail(3000)
        worker.kill()
        if evidence_logs.strip():
            evidence["logs"] = evidence_logs


def call_worker(
    worker: sandbox.Worker,
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
    except sandbox.WorkerTimeout as exc:
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
    except sandbox.WorkerMemoryExceeded as exc:
        raise StopEvaluation(
            Verdict.reject(
                Reason.CRASHED, f"the candidate process {exc} and was killed", logs=worker.log_tail(), **evidence
            )
        ) from exc
    except sandbox.WorkerDied as exc:
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
    except (sandbox.WorkerDied, sandbox.WorkerTimeout, sandbox.WorkerMemoryExceeded) as exc:
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


def _case_skeleton(session: EvaluationSession) -> list[dict[str, Any]]:
    return [
        {
            "case": c["case"],
            "inputs": c["inputs"],
            "outputs": c["outputs"],
            "tolerance": c.get("tolerance"),
            "seeds": [],
        }
        for c in session.plan["cases"]
    ]


def _checks(session: EvaluationSession) -> list[str]:
    checks = list(CHECKS)
    if not session.options.static_checks:
        checks[0] = "static AST checks reported but NOT enforced (runtime layer only)"
    return checks


def _accept_detail(session: EvaluationSession) -> str:
    n_cases = len(session.plan["cases"])
    return (
        f"correct on {n_cases} case(s) x {len(session.seeds)} seeds (+ replay calls) within tolerance, "
        "and clean; not timed on CPU"
    )


def geomean(values: list[float]) -> float | None:
    """Geometric mean of positive values (None when there are none)."""
    positive = [v for v in values if v and v > 0]
    if not positive:
        return None
    return math.exp(sum(math.log(v) for v in positive) / len(positive))
