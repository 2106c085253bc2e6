"""One candidate's way through its fresh process: load, correctness calls, judgement, replay, timing.

Whatever happens in the candidate process (an exception, a segfault, ``os._exit(0)``, a hang, a memory
blow-up) becomes a verdict with the matching reason; the session then moves on.
"""

from __future__ import annotations

import random
import secrets
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluator import processes
from evaluator.calls import OutputChannel, StopEvaluation, call_worker, judge_outputs
from evaluator.timing_judge import time_candidate
from evaluator.verdict import NeedsGPU, Verdict

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
                  prefetched: processes.Worker | None = None) -> Verdict:
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
        return time_candidate(session, channel, folder, evidence)
    except StopEvaluation as stop:
        return stop.verdict
    finally:
        overhead["peak_host_memory_mb"] = round(worker.peak_rss_mb, 1)
        evidence_logs = worker.log_tail(3000)
        worker.kill()
        if evidence_logs.strip():
            evidence["logs"] = evidence_logs


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
