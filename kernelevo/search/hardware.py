"""Facts about the device the kernels will run on, for prompts and reports.

:func:`read_hardware` asks torch (name, SM count, L2 size, memory, compute capability) and, on
request, measures device-to-device copy bandwidth; without a GPU it describes the CPU and says that
kernels run in the Triton interpreter. :func:`describe_hardware` is the pure text form.
"""

from __future__ import annotations

import os
import platform
from typing import Any


def read_hardware(device: str = "cuda", measure_bandwidth: bool = False) -> dict[str, Any]:
    """Return facts about ``device`` (falls back to the CPU when CUDA is not available)."""
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        index = torch.device(device).index or 0
        props = torch.cuda.get_device_properties(index)
        facts: dict[str, Any] = {
            "device": "cuda",
            "name": props.name,
            "sm_count": props.multi_processor_count,
            "capability": f"{props.major}.{props.minor}",
            "memory_gb": round(props.total_memory / 2**30, 1),
            "l2_mb": round(getattr(props, "L2_cache_size", 0) / 2**20, 1) or None,
            "torch": torch.__version__,
        }
        if measure_bandwidth:
            facts["copy_bandwidth_tbs"] = round(measure_copy_bandwidth(index), 2)
        return facts
    return {
        "device": "cpu",
        "name": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "torch": torch.__version__,
        "note": "no GPU: Triton kernels run in the interpreter (TRITON_INTERPRET=1); timings need a GPU",
    }


def measure_copy_bandwidth(index: int = 0, nbytes: int = 1 << 30, trials: int = 10) -> float:
    """Device-to-device copy bandwidth in TB/s (read + write bytes over the median trial)."""
    import torch

    src = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{index}")
    dst = torch.empty_like(src)
    times: list[float] = []
    for _ in range(trials + 2):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        torch.cuda.synchronize(index)
        times.append(start.elapsed_time(end) / 1000.0)
    times = sorted(times[2:])
    return float(2 * nbytes / times[len(times) // 2] / 1e12)


def describe_hardware(facts: dict[str, Any]) -> str:
    """One or two lines for a prompt, e.g. "NVIDIA H200: 132 SMs, 50 MB L2, 141 GB, sm_90"."""
    if not facts:
        return "unknown device"
    if facts.get("device") != "cuda":
        return f"CPU ({facts.get('name') or 'unknown'}, {facts.get('cores')} cores). {facts.get('note', '')}".strip()
    parts = [f"{facts.get('sm_count')} SMs"]
    if facts.get("l2_mb"):
        parts.append(f"{facts['l2_mb']:g} MB L2")
    if facts.get("memory_gb"):
        parts.append(f"{facts['memory_gb']:g} GB memory")
    if facts.get("max_shared_memory_per_block"):
        parts.append(f"{facts['max_shared_memory_per_block']} bytes of shared memory per block")
    if facts.get("copy_bandwidth_tbs"):
        parts.append(f"measured copy bandwidth {facts['copy_bandwidth_tbs']:g} TB/s")
    parts.append(f"compute capability {facts.get('capability')}")
    return f"{facts.get('name')}: " + ", ".join(parts)
