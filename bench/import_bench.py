"""Cost of ``import kernelevo`` plus decorating an op, in fresh interpreters: wall time measured in the
child with perf_counter, the ``-X importtime`` self+cumulative figures of kernelevo's modules, and the
modules the import added (none of torch, triton, pydantic, typing may appear).

Measured with byte-code caching (as for an installed package: a private PYTHONPYCACHEPREFIX, warmed
first) and without it (PYTHONDONTWRITEBYTECODE, as on this CI machine).
Writes bench/results/import_<hostname>.json.

    python bench/import_bench.py [--runs 30] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _report import header

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import sys, time, json
before = set(sys.modules)
t0 = time.perf_counter()
import kernelevo

@kernelevo.optimize(inputs=lambda device: [], small_inputs=lambda device: [], tolerance=1e-3)
def op(x):
    return x

t1 = time.perf_counter()
print(json.dumps({"seconds": t1 - t0, "added": sorted(set(sys.modules) - before)}))
"""


def _child(env: dict, importtime: bool = False) -> tuple[dict, str]:
    args = [sys.executable] + (["-X", "importtime"] if importtime else []) + ["-c", CHILD]
    proc = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    return json.loads(proc.stdout), proc.stderr


def _importtime_us(stderr: str) -> dict[str, dict[str, int]]:
    """kernelevo's rows of ``-X importtime`` output ("import time: self | cumulative | name")."""
    out = {}
    for line in stderr.splitlines():
        fields = line.removeprefix("import time:").split("|")
        if not line.startswith("import time:") or len(fields) != 3 or not fields[0].strip().isdigit():
            continue
        name = fields[2].strip()
        if name.startswith("kernelevo") or name == "__future__":
            out[name] = {"self_us": int(fields[0]), "cumulative_us": int(fields[1])}
    return out


def measure(runs: int, cached: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory(prefix="kernelevo-import-bench-") as cache:
        if cached:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = cache
            _child(env)  # write the byte-code cache
        else:  # an empty prefix that is never written: every module is compiled from source
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            env["PYTHONPYCACHEPREFIX"] = cache
        samples = [_child(env)[0] for _ in range(runs)]
        first, stderr = _child(env, importtime=True)
    seconds = [s["seconds"] for s in samples]
    return {
        "median_ms": statistics.median(seconds) * 1e3,
        "min_ms": min(seconds) * 1e3,
        "max_ms": max(seconds) * 1e3,
        "runs": runs,
        "modules_added": first["added"],
        "importtime_us": _importtime_us(stderr),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    host = socket.gethostname()
    report = {
        **header("import"),
        "what": "import kernelevo + decorate one function with @kernelevo.optimize, in a fresh interpreter",
        "bytecode_cached": measure(args.runs, cached=True),
        "bytecode_not_cached": measure(args.runs, cached=False),
    }
    heavy = {"torch", "triton", "pydantic", "pydantic_settings", "yaml", "typing", "inspect", "numpy"}
    report["heavy_modules_imported"] = sorted(heavy & set(report["bytecode_cached"]["modules_added"]))
    out = args.out or Path(__file__).parent / "results" / f"import_{host}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
