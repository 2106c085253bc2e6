"""Entry point of a worker process (started by :mod:`evaluator.processes`, never imported by the parent).

Start-up (interpreter, torch, triton, CUDA context) happens before the first request arrives, so a
pre-started worker is ready the moment a candidate needs it. Replies go to a private pipe; stdout and
stderr are a log file that candidate prints cannot escape from.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
import traceback
from typing import Any


def _limit_resources(device: str, memory_mb: int) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    file_limit = 16 * 1024**3  # no file (the log of candidate prints included) may grow past 16 GB
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))
    if device == "cpu":  # CUDA reserves huge virtual ranges, so RLIMIT_AS is for CPU workers only;
        limit = memory_mb * 1024 * 1024  # the parent's RSS watchdog covers both
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def main(argv: list[str]) -> None:
    role, device, result_fd, memory_mb, nonce = argv
    del sys.argv[1:]
    started = time.perf_counter()
    _limit_resources(device, int(memory_mb))
    out = os.fdopen(int(result_fd), "wb", buffering=0)

    def send(payload: dict[str, Any]) -> None:
        out.write((json.dumps({**payload, "nonce": nonce}, default=str) + "\n").encode())

    import torch  # noqa: F401  (start-up cost paid before the first request)

    try:
        import triton  # noqa: F401
    except ImportError:
        pass
    if device == "cuda":
        try:
            torch.cuda.init()
            torch.empty(1, device="cuda")
            from evaluator.sandboxed.timing import limit_persisting_l2

            limit_persisting_l2()
        except Exception as exc:  # no GPU, no CUDA build, a broken driver: the evaluation cannot run
            send({"ready": False, "ok": False, "kind": "setup_error",
                  "message": f"--device cuda: no usable CUDA device ({type(exc).__name__}: {exc}); run on a GPU "
                             "machine or use --device cpu (correctness only, Triton interpreter)"})
            return
    from evaluator.sandboxed.candidate import CandidateRunner
    from evaluator.sandboxed.output_checks import Rejection
    from evaluator.sandboxed.reference import ReferenceRunner
    from evaluator.sandboxed.taskspec import TaskError

    if role == "candidate":
        from evaluator.sandboxed.guards import warm_up_guards

        warm_up_guards()
    runner: Any = ReferenceRunner() if role == "reference" else CandidateRunner()
    send({"ready": True, "pid": os.getpid(), "startup_s": time.perf_counter() - started})
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("nonce") != nonce:
            send({"ok": False, "kind": "protocol", "message": "request without the session nonce"})
            continue
        op = request["op"]
        t0 = time.perf_counter()
        try:
            reply = getattr(runner, op)(request)
        except TaskError as exc:
            reply = {"ok": False, "kind": "task_error", "message": str(exc)}
        except Rejection as exc:
            reply = {"ok": False, "kind": "rejected", "reason": exc.reason, "message": str(exc)}
        except MemoryError:
            reply = {"ok": False, "kind": "rejected", "reason": "crashed",
                     "message": f"ran out of memory (cap {memory_mb} MB) during {op}"}
        except BaseException as exc:  # SystemExit from a candidate too: report, never exit quietly
            reply = {"ok": False, "kind": "rejected", "reason": "crashed",
                     "message": f"{type(exc).__name__} during {op}: {exc}", "trace": traceback.format_exc()[-2000:]}
        reply["seconds"] = time.perf_counter() - t0
        send(reply)
