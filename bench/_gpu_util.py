"""Sample how busy the GPU is while a block runs: NVML's kernel-active utilisation, read in a thread.

NVML reports, per sample period, the percentage of time one or more kernels ran on the device. The mean
of those samples over a search is the GPU busy fraction that bench/run.py reports; the search's own
``evaluator_busy_fraction`` (time inside evaluations / elapsed) counts CPU-side work as busy and so
overstates it.
"""

from __future__ import annotations

import os
import threading
from types import TracebackType


def _nvml_index() -> int:
    """NVML numbers GPUs physically; CUDA_VISIBLE_DEVICES (when it holds indices) says which one we use."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return int(visible) if visible.isdigit() else 0


class GpuUtilisation:
    """Context manager: ``fraction`` is the mean kernel-active utilisation (0..1), None without NVML."""

    def __init__(self, interval_s: float = 0.2) -> None:
        self.interval_s = interval_s
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._nvml = None
        self._handle = None

    def __enter__(self) -> GpuUtilisation:
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml, self._handle = pynvml, pynvml.nvmlDeviceGetHandleByIndex(_nvml_index())
        except Exception:  # no NVML (CPU machine, missing nvidia-ml-py): nothing to sample
            return self
        self._thread = threading.Thread(target=self._sample, name="gpu-utilisation", daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.samples.append(int(self._nvml.nvmlDeviceGetUtilizationRates(self._handle).gpu))
            except Exception:
                return

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._nvml.nvmlShutdown()

    @property
    def fraction(self) -> float | None:
        return round(sum(self.samples) / len(self.samples) / 100, 4) if self.samples else None
