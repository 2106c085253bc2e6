"""Races and bad memory accesses on the GPU: a candidate run under ``compute-sanitizer`` (parent side).

Correctness calls cannot see every race (a lost update may not happen in the few calls made) and the CPU
interpreter sees none (it runs programs one after another). So the accepted candidate of a search is run
once more, in its own sandboxed process, under ``compute-sanitizer --tool racecheck`` and ``--tool
memcheck`` on the task's smallest case. The decision rests on the sanitizer's exit status
(``--error-exitcode``), which the candidate cannot set: it cannot make the tool that wraps it exit 0 after
the tool found an error. The tool's report (in the process log) is quoted in the result.

Where the tool cannot run (not installed; some GPU runtimes, e.g. gVisor, refuse it) the result says so
(``unavailable``) and nothing is concluded.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from evaluator import processes
from evaluator.callplan import Call, InputSet, case_elements
from evaluator.verdict import SanitizerResult, SanitizerStatus

if TYPE_CHECKING:
    from evaluator.session import EvaluationSession
    from evaluator.static_check import StaticReport

ERROR_EXIT = 97
TOOLS = ("racecheck", "memcheck")
_SUMMARY = re.compile(r"(ERROR SUMMARY: \d+ errors?|RACECHECK SUMMARY: \d+ hazards? displayed[^\n]*)")
# memcheck also counts failed CUDA API calls as errors: the harness's own probes (a VMM export the driver refuses,
# torch asking for features this GPU lacks) are not the kernel's bad accesses, which memcheck
# reports as such ("Invalid __global__ write", a misaligned address) whatever this flag says.
_TOOL_FLAGS = {"memcheck": ("--report-api-errors", "no")}
_UNSUPPORTED = ("Device not supported", "not supported on this", "error 999", "Unable to find injection library")



def find_sanitizer() -> str | None:
    """The compute-sanitizer binary: on PATH, else under CUDA_HOME or /usr/local/cuda."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "compute-sanitizer").is_file():
            return str(Path(root) / "bin" / "compute-sanitizer")
    return None


def classify(returncode: int | None, log: str) -> tuple[SanitizerStatus, str]:
    """What a finished sanitizer run means (pure): its exit status decides, its summary lines explain."""
    summary = "; ".join(dict.fromkeys(m.group(1) for m in _SUMMARY.finditer(log)))
    if any(marker in log for marker in _UNSUPPORTED):
        return SanitizerStatus.UNAVAILABLE, summary or "compute-sanitizer does not support this machine's GPU runtime"
    if returncode == 0:
        return SanitizerStatus.CLEAN, summary or "no errors"
    if returncode == ERROR_EXIT:
        return SanitizerStatus.ERRORS, summary or f"exit status {ERROR_EXIT}: the tool reported errors"
    return SanitizerStatus.FAILED, summary or f"the run ended with status {returncode}"


def sanitize(session: EvaluationSession, source: str, tools: tuple[str, ...] = TOOLS,
             timeout_s: float = 600.0) -> list[SanitizerResult]:
    """Run ``source`` under each tool on the session's smallest case (two calls, fresh storage each), the tools
    in parallel."""
    if session.device != "cuda":
        return [SanitizerResult(tool=t, status=SanitizerStatus.UNAVAILABLE, summary="CPU run: no GPU to check")
                for t in tools]
    binary = find_sanitizer()
    if binary is None:
        return [SanitizerResult(tool=t, status=SanitizerStatus.UNAVAILABLE, summary="compute-sanitizer not found")
                for t in tools]
    # The tools side by side, each in its own process: a search's winner waits for the slower of the two instead
    # of their sum (about 15 s each on an H200). The caller holds the GPU (EvaluationSession.sanitize: exclusive).
    from evaluator.static_check import check_source

    report = check_source(source, "candidate", allow_torch=session.plan.get("allow_ops", []))
    with ThreadPoolExecutor(max(len(tools), 1), thread_name_prefix="kernelevo-sanitize") as pool:
        return list(pool.map(lambda tool: _run_one(session, source, report, binary, tool, timeout_s), tools))


def _smallest_inputs(session: EvaluationSession) -> InputSet:
    sizes = case_elements(session.plan["cases"])
    case = min(sizes, key=sizes.__getitem__)
    first = next(i for i in session.plan["inputs"] if int(i["case"]) == case)
    return InputSet(case, int(first["seed"]), first["file"], session.distribution_of(int(first["seed"])))


def _run_one(session: EvaluationSession, source: str, report: StaticReport, binary: str, tool: str,
             timeout_s: float) -> SanitizerResult:
    from evaluator.run_candidate import send_load

    started = time.perf_counter()
    wrapper = [binary, "--tool", tool, "--error-exitcode", str(ERROR_EXIT), "--print-limit", "20",
               "--target-processes", "all", *_TOOL_FLAGS.get(tool, ())]
    worker = processes.spawn_worker("candidate", "cuda", session.procs, session.options.memory_mb, wrapper=wrapper,
                                    workspace=session.placement.repo)
    try:
        send_load(session, worker, source, report)
        worker.wait_ready(timeout_s)
        loaded = worker.receive(timeout_s)
        if not loaded.get("ok", False):
            return SanitizerResult(tool=tool, status=SanitizerStatus.FAILED,
                                   summary=loaded.get("message", "load failed"),
                                   seconds=round(time.perf_counter() - started, 1))
        inputs = _smallest_inputs(session)
        calls = [Call(f"s-{k}", inputs, "fresh", guarded=False, poison=False) for k in range(2)]
        fd = os.open(inputs.file, os.O_RDONLY | os.O_CLOEXEC)
        try:
            checked = worker.request({"op": "check", "calls": [c.request(0) for c in calls], "key": 1, "mode": "file"},
                                     timeout_s, [fd])
        finally:
            os.close(fd)
        worker.request({"op": "shutdown"}, timeout_s)
        code = worker.process.wait(timeout=timeout_s)
        status, summary = classify(code, worker.log_tail(20000))
        if status is SanitizerStatus.CLEAN and not checked.get("ok", False):
            status, summary = SanitizerStatus.FAILED, checked.get("message", "the checked calls failed")
        return SanitizerResult(tool=tool, status=status, summary=summary, excerpt=_excerpt(worker.log_tail(20000)),
                               seconds=round(time.perf_counter() - started, 1))
    except (processes.WorkerDied, processes.WorkerTimeout, processes.WorkerMemoryExceeded) as exc:
        returncode = worker.process.poll()  # None while the process still runs
        status, summary = classify(returncode, worker.log_tail(20000))
        if status is SanitizerStatus.CLEAN:
            status = SanitizerStatus.FAILED
        return SanitizerResult(tool=tool, status=status, summary=summary or str(exc),
                               excerpt=_excerpt(worker.log_tail(20000)),
                               seconds=round(time.perf_counter() - started, 1))
    except Exception as exc:  # the process's wait timed out, a descriptor failed: inconclusive, never a pass
        return SanitizerResult(tool=tool, status=SanitizerStatus.FAILED,
                               summary=f"{type(exc).__name__}: {exc}"[:300],
                               seconds=round(time.perf_counter() - started, 1))
    finally:
        worker.kill()


def _excerpt(log: str, limit: int = 2000) -> str:
    """The sanitizer's own lines (prefixed ``=========``), not what the candidate printed, without the host
    backtraces (Python's interpreter frames say nothing about the kernel): the findings first, then the summary."""
    lines = [line for line in log.splitlines()
             if line.startswith("=========") and line.strip("= ") and "Host Frame" not in line]
    return "\n".join(lines)[:limit]
