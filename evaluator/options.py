"""Knobs of one evaluation, with the defaults docs/verifier.md describes."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class EvalOptions:
    """How hard to look at a candidate. The defaults are the protocol; tests may shrink them."""

    seeds: int = 5  # correctness seeds per case (at least 5 for an accepted verdict)
    timeout_s: float = 300.0  # wall clock per phase (import+compile, correctness, timing)
    memory_mb: int = 16384  # host memory cap of a candidate process
    static_checks: bool = True  # off only in tests that prove the runtime layer on its own
    small_cases: bool | None = None  # None: small cases on CPU, scored cases on CUDA
    timing_trials: int = 100
    warmup_ms: float = 25.0
    timing_input_sets: int = 8  # rotating input sets for timing (plus L2 flush)
    baselines: tuple[str, ...] = ("eager", "compile_default", "compile_max_autotune")
    max_slowdown: float = 25.0  # slower than this many times the best baseline: too_slow
    allow_torch_ops: tuple[str, ...] = field(default_factory=tuple)  # extra to the task's own list
    prefetch: bool | None = None  # load the next candidate during the current one (None: on CUDA only)
    ready_workers: int = 1  # candidate processes started ahead (see ready_workers_for)
    output_handoff: str = "auto"  # "auto": CUDA VMM file descriptors on a GPU, files on CPU; "file": always files
    sanitize: bool = False  # GPU: an accepted candidate is also run under compute-sanitizer racecheck + memcheck
    # An accepted candidate is run once more in a plain process (no instrumentation) and judged again
    # (evaluator.plain_run); a search turns it off for its candidates and confirms its winner instead.
    plain_run: bool = True


# A candidate process on a GPU host starts in 8-10 s (torch and its CUDA libraries, torch._dynamo for the op
# recorder, the CUDA context with the trace shim: bench/startup_probe.py), while an evaluation takes 3-5 s; on CPU
# start-up (2 s) is shorter than an evaluation. Two processes more than evaluations in flight hide the GPU's
# start-up; each idle one costs a CUDA context (about 0.5 GB of GPU memory) and about 1 GB of host memory.
GPU_EXTRA_READY = 2


def ready_workers_for(device: str, in_flight: int) -> int:
    """Candidate processes to keep started for ``in_flight`` evaluations at once on ``device``."""
    return max(1, in_flight) + (GPU_EXTRA_READY if device == "cuda" else 0)
