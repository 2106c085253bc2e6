"""What a result was measured on: GPU, driver, library versions (for verdicts and bench JSON)."""

from __future__ import annotations

import datetime as _dt
import platform
import subprocess
from typing import Any


def collect(device: str) -> dict[str, Any]:
    """Versions and hardware facts of the current process's device (call inside a worker)."""
    import torch

    info: dict[str, Any] = {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "host": platform.node(),
        "cpu": platform.processor() or platform.machine(),
    }
    try:
        import triton

        info["triton"] = triton.__version__
    except ImportError:
        info["triton"] = None
    if device == "cuda" and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        info.update(
            gpu=props.name,
            capability=f"{props.major}.{props.minor}",
            sm_count=props.multi_processor_count,
            gpu_memory_gb=round(props.total_memory / 2**30, 1),
            l2_cache_mb=round(getattr(props, "L2_cache_size", 0) / 2**20, 1),
            # what one block may opt in to (torch >= 2.1 exposes it; the proposer's feasibility checks read it)
            shared_memory_per_block=getattr(props, "shared_memory_per_block_optin", None),
            cuda_runtime=torch.version.cuda,
            driver=_driver_version(),
        )
    else:
        info["gpu"] = None
        info["triton_interpreter"] = True
    return info


def _driver_version() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, subprocess.TimeoutExpired):
        return None
