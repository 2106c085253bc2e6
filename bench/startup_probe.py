"""Where a candidate process's start-up goes on this machine: run it on the GPU machine and read the JSON.

    python bench/startup_probe.py --out startup_probe.json [--repeats 2]

Starts candidate processes the way a session does (``evaluator.processes.spawn_worker``) under variants that
differ in one thing each, and records each one's ``startup_phases`` (torch import, Triton import, CUDA context,
the role's runner and guards) and its wall time from spawn to the ready message:

- ``plain``: ``python -c "import torch, triton; torch.empty(1, device='cuda')"`` outside any sandbox (the floor);
- ``sandboxed``: the candidate process in its sandbox, without the kernel-trace shim;
- ``traced``: as a session starts it (sandbox and the CUPTI shim preloaded);
- ``traced_no_latency``: the shim without queued timestamps (``KERNELEVO_TRACE_LATENCY=0``);
- ``traced_lazy``: the shim with ``CUDA_MODULE_LOADING=LAZY`` set explicitly;
- ``traced_parallel3``: three traced processes started at once (what ``ready_workers=3`` costs each).

Nothing here decides a verdict; the numbers say which part of start-up to cut.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PLAIN = ("import time; t = time.perf_counter(); import torch; a = time.perf_counter(); import triton; "
         "b = time.perf_counter(); torch.empty(1, device='cuda'); c = time.perf_counter(); "
         "import json; print(json.dumps({'import_torch_s': a - t, 'import_triton_s': b - a, 'cuda_context_s': c - b}))")


def _plain(device: str) -> dict[str, Any]:
    started = time.perf_counter()
    code = PLAIN if device == "cuda" else PLAIN.replace("torch.empty(1, device='cuda'); ", "")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    row: dict[str, Any] = {"wall_s": round(time.perf_counter() - started, 3), "returncode": done.returncode}
    try:
        row["startup_phases"] = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        row["stderr"] = done.stderr[-800:]
    return row


def _spawned(device: str, workdir: Path, shim: Any, env: dict[str, str], count: int = 1) -> list[dict[str, Any]]:
    from evaluator import processes

    started = time.perf_counter()
    workers = [processes.spawn_worker("candidate", device, workdir, 8192, trace=shim, env_extra=env or None)
               for _ in range(count)]
    rows = []
    try:
        for worker in workers:
            ready = worker.wait_ready(300)
            rows.append({"wall_s": round(time.perf_counter() - started, 3), "startup_s": ready.get("startup_s"),
                         "startup_phases": ready.get("startup_phases"), "ready": ready.get("ready"),
                         "message": ready.get("message")})
    except Exception as exc:  # noqa: BLE001 - a probe reports, it never stops
        rows.append({"error": f"{type(exc).__name__}: {exc}"})
    finally:
        for worker in workers:
            worker.kill()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("startup_probe.json"))
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    shim = None
    result: dict[str, Any] = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "device": args.device}
    with tempfile.TemporaryDirectory(prefix="kernelevo-startup-") as tmp:
        workdir = Path(tmp)
        if args.device == "cuda":
            from evaluator.tracing.build import BuildError, build_shim

            built = build_shim(workdir / "trace")
            result["shim"] = str(built) if isinstance(built, BuildError) else {"cupti": built.cupti_origin,
                                                                                 "api": built.cupti_api_version}
            shim = None if isinstance(built, BuildError) else built
        variants: list[tuple[str, Any, dict[str, str], int]] = [("sandboxed", None, {}, 1)]
        if shim is not None:
            variants += [("traced", shim, {}, 1), ("traced_no_latency", shim, {"KERNELEVO_TRACE_LATENCY": "0"}, 1),
                         ("traced_lazy", shim, {"CUDA_MODULE_LOADING": "LAZY"}, 1), ("traced_parallel3", shim, {}, 3)]
        result["plain"] = [_plain(args.device) for _ in range(args.repeats)]
        print("plain", json.dumps(result["plain"]), flush=True)
        for name, trace, env, count in variants:
            args.out.write_text(json.dumps(result, indent=1))  # a time-boxed run keeps the variants it finished
            rows = []
            for _ in range(args.repeats if count == 1 else 1):
                rows += _spawned(args.device, workdir, trace, env, count)
            result[name] = rows
            print(name, json.dumps(rows), flush=True)
    args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
