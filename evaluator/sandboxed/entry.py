"""Entry point of a sandboxed verifier process (started by :mod:`evaluator.processes`; never imported by
the parent).

The first message on the request socket (fd 0) says who this process is and where replies go (the
nonce and the reply pipe's number): nothing of it is on the command line or in the environment. The
reply function keeps the nonce in its closure; the request loop hands each request its file
descriptors. Start-up (interpreter, torch, triton, CUDA context) happens before the first real request,
so a pre-started process is ready the moment a candidate needs it. stdout and stderr are a log file that
candidate prints cannot escape from.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from evaluator.sandboxed.wire import MAX_FDS_PER_MESSAGE


def _limit_resources(device: str, memory_mb: int) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    file_limit = 16 * 1024**3  # no file (the log of candidate prints included) may grow past 16 GB
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))
    if device == "cpu":  # CUDA reserves huge virtual ranges, so RLIMIT_AS is for CPU workers only;
        limit = memory_mb * 1024 * 1024  # the parent's watchdog (or the sandbox's cgroup) covers both
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _requests(channel: socket.socket) -> Iterator[tuple[dict[str, Any], list[int]]]:
    """JSON lines from the parent, each with the file descriptors it carries (``nfds``)."""
    buffer, fds = b"", []
    while True:
        while b"\n" not in buffer:
            data, received, _flags, _addr = socket.recv_fds(channel, 1 << 20, MAX_FDS_PER_MESSAGE)
            if not data:
                return
            buffer += data
            fds += received
        line, buffer = buffer.split(b"\n", 1)
        request = json.loads(line)
        count = int(request.pop("nfds", 0))
        mine, fds = fds[:count], fds[count:]
        yield request, mine


def _reply_writer(result_fd: int, nonce: str) -> Callable[[dict[str, Any]], None]:
    out = os.fdopen(result_fd, "wb", buffering=0)

    def send(payload: dict[str, Any]) -> None:
        out.write((json.dumps({**payload, "nonce": nonce}, default=str) + "\n").encode())

    return send


def main() -> None:
    channel = socket.socket(fileno=0)
    requests = _requests(channel)
    hello, _ = next(requests)
    role, device, memory_mb = hello["role"], hello["device"], int(hello["memory_mb"])
    private = Path(hello["private"])
    scratch = Path(hello["scratch"]) if hello.get("scratch") else None
    send = _reply_writer(int(hello["result_fd"]), hello["nonce"])
    del hello
    started = time.perf_counter()
    phases: dict[str, float] = {}  # where start-up went (reported for profiling; no decision reads it)
    last = started

    def lap(name: str) -> None:
        nonlocal last
        now = time.perf_counter()
        phases[name], last = round(now - last, 3), now

    _limit_resources(device, memory_mb)

    import torch  # noqa: F401  (start-up cost paid before the first request)

    lap("import_torch_s")
    try:
        import triton  # noqa: F401
    except ImportError:
        pass
    lap("import_triton_s")
    if device == "cuda":
        try:
            torch.cuda.init()
            # torch counts devices through NVML (ctypes loading libnvidia-ml) at its first device_count() after
            # the CUDA set-up and keeps the number: counted here, a kernel launch asking later loads nothing
            torch.cuda.device_count()
            torch.empty(1, device="cuda")
            lap("cuda_context_s")  # with the trace shim preloaded, CUPTI's activity set-up is in here
            from evaluator.sandboxed.timing import limit_persisting_l2

            limit_persisting_l2()
            if role == "candidate":  # the only role that launches Triton kernels
                _warm_triton_driver()
                lap("triton_driver_s")
        except Exception as exc:  # no GPU, no CUDA build, a broken driver: the evaluation cannot run
            send({"ready": False, "ok": False, "kind": "setup_error",
                  "message": f"--device cuda: no usable CUDA device ({type(exc).__name__}: {exc}); run on a GPU "
                             "machine or use --device cpu (correctness only, Triton interpreter)"})
            return
    from evaluator.sandboxed.output_checks import Rejection
    from evaluator.sandboxed.taskspec import TaskError

    runner = _runner(role, private, device, scratch)
    lap("runner_s")  # the role's modules, and for a candidate the guards' warm-up
    send({"ready": True, "pid": os.getpid(), "startup_s": time.perf_counter() - started, "startup_phases": phases})
    for request, fds in requests:
        op = request.get("op")
        if op == "shutdown":  # end normally (a tool wrapping this process then writes its report)
            send({"ok": True, "shutdown": True})
            return
        t0 = time.perf_counter()
        try:
            handler = getattr(runner, str(op), None) if not str(op).startswith("_") else None
            if handler is None:
                reply = {"ok": False, "kind": "protocol", "message": f"unknown request {op!r}"}
            else:
                reply = handler(request, fds)
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
        finally:
            for fd in fds:  # a request's descriptors never outlive it
                try:
                    os.close(fd)
                except OSError:
                    pass
        reply["seconds"] = time.perf_counter() - t0
        send(reply)


def _warm_triton_driver() -> None:
    """Have Triton set up its CUDA driver now, before any request: at its first use it compiles and loads its C
    helpers (``cuda_utils``) with the host's compiler, about a second that a pre-started process then pays while it
    waits instead of inside the candidate's first call. A Triton that cannot (none installed, an older layout)
    does it later, as before."""
    try:
        import triton.runtime

        _ = triton.runtime.driver.active.utils
    except Exception:  # noqa: BLE001 - an optimisation only: the first launch sets the driver up instead
        pass


def _runner(role: str, private: Path, device: str, scratch: Path | None) -> Any:
    if role == "reference":
        from evaluator.sandboxed.reference import ReferenceRunner

        return ReferenceRunner(private, device)
    if role == "candidate":
        from evaluator.sandboxed.candidate import CandidateRunner
        from evaluator.sandboxed.guards import warm_up_guards

        warm_up_guards()
        return CandidateRunner(private, device, scratch)
    if role == "plain":  # the accepted candidate once more, uninstrumented (nothing warmed up for it either)
        from evaluator.sandboxed.plain import PlainRunner

        return PlainRunner(private, device)
    if role == "proposer":
        from evaluator.sandboxed.proposer import ProposerRunner

        return ProposerRunner(private)
    raise SystemExit(f"unknown role {role!r}")
