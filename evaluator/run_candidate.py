"""One candidate's way through its fresh sandboxed process: load, the planned calls, judgement, timing.

The parent decides everything that matters here: which calls are made in which order
(:mod:`evaluator.callplan`), what each output must be (the reference process judges it), and, on a
GPU, what ran (the launch record) and how long it took. Whatever happens in the candidate process (an
exception, a segfault, ``os._exit(0)``, a hang, a memory blow-up, a forged reply) becomes a verdict with
the matching reason; the session then moves on.
"""

from __future__ import annotations

import os
import random
import secrets
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluator import processes
from evaluator.callplan import InputSet, case_elements, plan_checks
from evaluator.calls import Judged, OutputChannel, StopEvaluation, call_worker, judge_outputs, reported_phases, sent_for
from evaluator.static_kernel_body import calls_back_per_element
from evaluator.timing_judge import time_candidate
from evaluator.trace_checks import check_trace
from evaluator.tracing.judge import Expected
from evaluator.verdict import EvalSetupError, NeedsGPU, Overhead, Reason, Verdict

if TYPE_CHECKING:
    from evaluator.session import EvaluationSession
    from evaluator.static_check import StaticReport


CHECKS = [
    "static AST checks",
    "OS sandbox: no network, no other processes, no secrets, private temp dir",
    "runtime guards (audit hook, torch-op recorder, host-conversion guard, launch counter, patch and thread "
    "detection)",
    "inputs and weights passed as file descriptors per request: none exist while the candidate is imported",
    "every call judged; their number, order and kinds are secret",
    "NaN-poisoned allocations on some calls",
    "sentinel guard regions around inputs on some calls, plain tensors on others",
    "inputs unchanged after each call",
    "outputs are plain tensors that alias no input or earlier output",
    "repeated runs on identical inputs agree bitwise (judged by the reference)",
    "new values in the same input storage give new answers",
    "input distributions covering the op's domain (signs, magnitudes, offsets, heavy tails) from secret seeds",
    "float64 reference in a separate process",
    "tolerance widened only as far as eager PyTorch's own error on the same inputs, + relative error + "
    "not-constant + NaN/Inf positions",
]


def write_new_file(path: Path, text: str) -> None:
    """Create ``path`` (never through a link, never over an existing file: the folder is a sandbox's)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def write_candidate(session: EvaluationSession, worker: processes.Worker, source: str) -> None:
    """Put the candidate's source where its process imports it (:mod:`evaluator.placement`); the process has run
    the harness only so far, so nothing in its folder is a candidate's doing."""
    path = session.placement.host_path(worker.private)
    folder = worker.private
    for part in path.relative_to(worker.private).parts[:-1]:  # one level at a time, never through a link
        folder = folder / part
        if folder.is_symlink():  # only a process outside any sandbox (KERNELEVO_ISOLATION=off) could plant one
            raise EvalSetupError(f"{folder}: a link inside a candidate process's folder; refusing to write through it")
        folder.mkdir(exist_ok=True)
    write_new_file(path, source)


def load_request(session: EvaluationSession, own_ops: list[str] | None = None) -> dict[str, Any]:
    """The request that makes a candidate process ready (module imported, ``ModelNew`` built); the reference
    model's state goes with it as a file descriptor."""
    return {
        "op": "load",
        "module": session.placement.request(),
        "init_seed": session.init_seed,
        "allow_ops": _allow_ops(session),
        "own_ops": list(own_ops or []),
        "runtime_guards": True,
        "forward_arities": session.plan.get("forward_arities", []),
        "model_forward": session.plan.get("model_forward", ""),
        "expected": [{"case": c["case"], "outputs": c["outputs"]} for c in session.plan["cases"]],
    }


def send_load(session: EvaluationSession, worker: processes.Worker, source: str, report: StaticReport) -> None:
    """Put the candidate's source in its process's folder and ask it to load (without waiting); ``report``: the
    source's static check (its own torch.library ops go with the request)."""
    own_ops = report.custom_ops
    write_candidate(session, worker, source)
    session.stage_builds(worker, source)
    fd = os.open(session.plan["init_file"], os.O_RDONLY | os.O_CLOEXEC)
    try:
        worker.send(load_request(session, own_ops), [fd])
    finally:
        os.close(fd)


def run_candidate(session: EvaluationSession, source: str, evidence: dict[str, Any],
                  report: StaticReport, prefetched: processes.Worker | None = None) -> Verdict:
    """Run the dynamic part of the protocol for one candidate (``report``: its static check, already passed;
    ``prefetched``: a process that was sent the load request earlier, so that its import overlapped the previous
    candidate)."""
    options = session.options
    overhead = Overhead()  # the verdict keeps this instance: phases written in `finally` below still reach it
    evidence["overhead"] = overhead
    evidence["correctness"] = {
        "seeds": len(session.seeds),
        "distributions": session.plan.get("distributions", []),
        "dropped_distributions": session.plan.get("dropped_distributions", []),
        "reference_precision": session.plan.get("reference_precision"),
        "checks": list(_checks(session)),
        "cases": _case_skeleton(session),
        "init_inputs": session.plan.get("init_inputs", []),
        "small_cases": bool(session.plan.get("small_cases", False)),
    }
    t0 = time.perf_counter()
    keep = False
    if prefetched is None:
        worker = session.pool.take()
        send_load(session, worker, source, report)
    else:
        worker = prefetched
    overhead["prefetched"] = prefetched is not None
    try:
        ready = call_worker(worker, None, options.timeout_s, evidence)
        overhead["process_startup_s"] = round(float(ready.get("startup_s", 0.0)), 3)
        overhead["startup_phases"] = reported_phases(ready, "startup_phases")
        overhead["waited_for_process_s"] = round(time.perf_counter() - t0, 3)
        t = time.perf_counter()
        loaded = call_worker(worker, {"op": "load"}, options.timeout_s, evidence, already_sent=True)
        overhead["load_s"] = round(time.perf_counter() - t, 3)  # the wait for its reply: a prefetched load ran ahead
        overhead["load_phases"] = reported_phases(loaded)
        if session.device == "cpu" and evidence.get("backend") == "cuda":
            # NVRTC compiled it at import (a compile error would have stopped above): that is all a CPU can check.
            raise NeedsGPU(f"{evidence['candidate']}: the CUDA kernels compile (NVRTC), but running them needs "
                           "a GPU: evaluate with --device cuda")
        channel = OutputChannel(worker, secrets.randbits(62))
        rng = random.Random(secrets.randbits(64))
        inputs = [InputSet(int(i["case"]), int(i["seed"]), i["file"], session.distribution_of(int(i["seed"])))
                  for i in session.plan["inputs"]]
        calls = plan_checks(inputs, rng, extra=(1.0, 2.0) if session.device == "cpu" else (0.2, 0.5),
                            vary_training=bool(session.plan.get("training_mode_free")),
                            vary_input_grad=report.differentiable)
        files = sorted({c.inputs.file for c in calls})
        index = {f: k for k, f in enumerate(files)}
        t = time.perf_counter()
        try:
            with session.gpu.shared():  # other evaluations may check at the same time, none is timing
                checked = call_worker(
                    worker,
                    {"op": "check", "calls": [c.request(index[c.inputs.file]) for c in calls],
                     **channel.request(session)},
                    options.timeout_s, evidence, files=files,
                )
        except StopEvaluation as stop:
            line = calls_back_per_element(source) if session.device == "cpu" and \
                stop.verdict.reason == Reason.TIMEOUT else None  # fmt: skip
            if line is not None:
                raise NeedsGPU(f"{evidence['candidate']}: its correctness calls did not finish within "
                               f"{options.timeout_s:.0f} s on the CPU, where the Triton interpreter runs the function "
                               f"a Triton operation calls back (line {line}: tl.reduce / tl.associative_scan with a "
                               f"@triton.jit combine function) as Python once per element: evaluate it with "
                               f"--device cuda (or give the CPU a larger --timeout)") from None
            raise
        overhead["check_s"] = round(time.perf_counter() - t, 3)
        overhead["check_phases"] = reported_phases(checked)
        overhead["checked_calls"] = len(calls)
        evidence["resources"] = checked.get("resources") or {}
        sent = checked.get("sent") or {}
        if checked.get("export_failed"):  # the candidate process's word: it changes only how its own outputs travel
            session.note_file_handoff(f"exporting outputs as CUDA VMM file descriptors failed in the candidate "
                                      f"process: {str(checked['export_failed'])[:300]}")
        judged = [Judged(c.name, c.inputs.case, c.inputs.seed, c.inputs.distribution,
                         sent_for(sent, c.name, worker), group=c.group) for c in calls]
        elements = case_elements(session.plan["cases"])
        called = tuple(elements.get(c.inputs.case, 0) for c in calls)
        check_trace(worker, checked.get("trace_seq"), source, _allow_ops(session),
                    Expected(forward=tuple(range(len(calls))), forward_elements=dict(enumerate(called))), evidence,
                    "correctness calls")
        if checked.get("small_torch_ops"):
            evidence.setdefault("flags", []).append("torch ops on small tensors (bookkeeping): "
                                                    + ", ".join(checked["small_torch_ops"]))
        t = time.perf_counter()
        try:
            judge_outputs(session, channel, judged, evidence, "correctness")
        except StopEvaluation as stop:
            if stop.verdict.reason == "incorrect" and checked.get("interpreter_bf16_arithmetic"):
                raise NeedsGPU(f"{evidence['candidate']}: wrong on CPU, but the kernel computes on bfloat16 values, "
                               "which the CPU's Triton interpreter gets wrong: evaluate it with --device cuda "
                               f"({stop.verdict.detail[:200]})") from None
            raise
        overhead["judge_s"] = round(time.perf_counter() - t, 3)
        if session.device == "cpu":
            keep = True
            return Verdict.accept(_accept_detail(session, len(calls)), **evidence)
        verdict = time_candidate(session, channel, evidence, source=source, checked_elements=called)
        keep = True
        return verdict
    except StopEvaluation as stop:
        return stop.verdict
    finally:
        overhead["peak_host_memory_mb"] = round(worker.peak_rss_mb, 1)
        t = time.perf_counter()
        evidence_logs = worker.log_tail(3000)
        worker.kill(keep_private=keep)
        if keep:  # copied once the process is dead: nothing in the folder changes while it is read
            session.keep_builds(worker, source)
        worker.remove_private()
        overhead["cleanup_s"] = round(time.perf_counter() - t, 3)
        if evidence_logs.strip():
            evidence["logs"] = evidence_logs


def _allow_ops(session: EvaluationSession) -> list[str]:
    return [*session.options.allow_torch_ops, *session.plan.get("allow_ops", [])]


def _case_skeleton(session: EvaluationSession) -> list[dict[str, Any]]:
    return [
        {
            "case": c["case"],
            "inputs": c["inputs"],
            "outputs": c["outputs"],
            "tolerance": c.get("tolerance"),
            "widen_max": c.get("widen_max", 1.0),
            "checks": [],
        }
        for c in session.plan["cases"]
    ]


def _checks(session: EvaluationSession) -> list[str]:
    checks = list(CHECKS)
    if not session.options.static_checks:
        checks[0] = "static AST checks reported but NOT enforced (runtime layer only)"
    if session.isolation != "bubblewrap":
        checks[1] = f"NO OS sandbox ({session.isolation}): trusted single-user machine override"
    return checks


def _accept_detail(session: EvaluationSession, calls: int) -> str:
    n_cases = len(session.plan["cases"])
    sizes = "the task's small cases" if session.plan.get("small_cases") else "the task's scored cases"
    return (
        f"correct on {n_cases} case(s) x {len(session.seeds)} seeds in {calls} judged calls, within tolerance, "
        f"and clean; not timed on CPU; checked at {sizes} only (a stored kernel dispatches only within the sizes "
        "verified)"
    )
