"""Compile N distinct small CUDA kernels with kernelevo.cuda, cold (NVRTC) and warm (disk cache).

Writes bench/results/cuda_compile_<hostname>.json with per-kernel seconds, versions and the date.
Runs without a GPU (compiling needs none); the arch defaults to the current GPU's, else sm_90.

    python bench/cuda_compile_bench.py [--kernels 20] [--arch sm_90] [--out PATH]
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

TEMPLATE = r"""
#include <cuda_fp16.h>
extern "C" __global__ void k{i}(const float* x, float* out, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = {expr};
}}
"""
EXPRESSIONS = ["x[i] * {c}f", "x[i] + {c}f", "fmaxf(x[i], {c}f)", "__expf(x[i]) * {c}f", "x[i] * x[i] - {c}f"]


def kernel_sources(count: int) -> list[tuple[str, str]]:
    """``count`` distinct (source, name) pairs: a few elementwise ops with varying constants."""
    out = []
    for i in range(count):
        expr = EXPRESSIONS[i % len(EXPRESSIONS)].format(c=f"{1.0 + i / 8:.3f}")
        out.append((TEMPLATE.format(i=i, expr=expr), f"k{i}"))
    return out


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def run(count: int, arch: str | None) -> dict:
    """Time cold compiles, then disk-cache hits (memory cache cleared), in a fresh cache directory."""
    from kernelevo import _cuda_nvrtc, cuda
    from kernelevo.settings import reset_settings_cache

    sources = kernel_sources(count)
    with tempfile.TemporaryDirectory(prefix="kernelevo-bench-") as cache:
        os.environ["KERNELEVO_CACHE_DIR"] = cache
        reset_settings_cache()
        cuda.clear_memory_cache()
        arch = arch or cuda.default_arch()
        start = time.perf_counter()
        cuda.compile('extern "C" __global__ void warm() {}', "warm", arch=arch)
        first_call = time.perf_counter() - start  # loads NVRTC and installs its bundled headers

        cold, warm = [], []
        compiles_before = cuda.nvrtc_compile_count()
        for source, name in sources:
            start = time.perf_counter()
            cuda.compile(source, name, arch=arch)
            cold.append(time.perf_counter() - start)
        cold_compiles = cuda.nvrtc_compile_count() - compiles_before
        cuda.clear_memory_cache()
        for source, name in sources:
            start = time.perf_counter()
            cuda.compile(source, name, arch=arch)
            warm.append(time.perf_counter() - start)
        warm_compiles = cuda.nvrtc_compile_count() - compiles_before - cold_compiles

    gpu = None
    try:
        import torch

        if torch.cuda.is_available():
            gpu = torch.cuda.get_device_name()
    except ImportError:
        pass
    return {
        "benchmark": "cuda_compile",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "hostname": socket.gethostname(),
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(),
            "gpu": gpu,
        },
        "versions": {
            "python": sys.version.split()[0],
            "nvrtc": _cuda_nvrtc.nvrtc_version(),
            "cuda-bindings": _version("cuda-bindings"),
            "cuda-core": _version("cuda-core"),
            "torch": _version("torch"),
            "kernelevo": _version("kernelevo"),
        },
        "arch": arch,
        "kernels": count,
        "first_call_seconds": first_call,
        "nvrtc_compiles": {"cold": cold_compiles, "warm": warm_compiles},
        "cold_seconds": dict(zip([n for _, n in sources], cold)),
        "warm_seconds": dict(zip([n for _, n in sources], warm)),
        "cold_summary": _summary(cold),
        "warm_summary": _summary(warm),
    }


def main() -> None:
    """Parse arguments, run the benchmark, write the JSON and print the summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=20)
    parser.add_argument("--arch", default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    result = run(args.kernels, args.arch)
    out = args.out or Path(__file__).parent / "results" / f"cuda_compile_{socket.gethostname()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    print(json.dumps({k: result[k] for k in ("first_call_seconds", "cold_summary", "warm_summary")}, indent=2))


if __name__ == "__main__":
    main()
