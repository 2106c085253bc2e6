"""The timing requests of the two worker roles: a candidate's timing, and the task's baselines.

Both sides build the same rotating input sets from the same seeds, so the candidate and eager /
torch.compile are timed on identical inputs. A secret random sample of the candidate's timed calls is
run under the op recorder, excluded from the statistics, and written to disk for the reference process
to re-validate: a kernel that behaves well only while it is being checked is caught there.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from evaluator.sandboxed import guards, handoff, taskspec, timing
from evaluator.sandboxed.output_checks import Rejection, require_outputs_left_alone

if TYPE_CHECKING:
    from evaluator.sandboxed.candidate import CandidateRunner
    from evaluator.sandboxed.reference import ReferenceRunner


def _input_sets(task: taskspec.LoadedTask, small: bool, seeds: list[int], device: str, inputs_dir: str | None,
                write: bool) -> list[list[list[Any]]]:
    """input_sets[case][k]: the k-th timing input set of each case, on the device."""
    per_seed = [taskspec.cached_cases(task, small, int(s), "task", inputs_dir, write) for s in seeds]
    n_cases = len(per_seed[0])
    return [[[v.to(device) if isinstance(v, torch.Tensor) else v for v in per_seed[k][ci]]
             for k in range(len(seeds))] for ci in range(n_cases)]


def candidate_time(runner: CandidateRunner, req: dict[str, Any]) -> dict[str, Any]:
    assert runner.model is not None
    model = runner.model
    phases = {"inputs_s": 0.0, "timed_calls_s": 0.0, "sampled_calls_s": 0.0, "graph_s": 0.0}
    clock = time.perf_counter()
    sets_per_case = _input_sets(runner.task, runner.small, req["seeds"], "cuda", req.get("inputs_dir"), False)
    phases["inputs_s"] = time.perf_counter() - clock
    flush = timing.flush_buffer()
    sample = set(int(i) for i in req["sample"])
    outdir = Path(req["outdir"])
    outdir.mkdir(parents=True, exist_ok=True)
    recorded: list[str] = []

    def call(*inputs: Any) -> Any:
        return model(*inputs)

    results, written = [], []
    rng = random.Random()  # secret: the candidate cannot predict the scales (nor which calls are checked)
    runner.audit.active = True
    try:
        for ci, sets in enumerate(sets_per_case):
            varied = timing.VariedInputs(sets, rng)
            launches = runner.launches.count
            with torch.no_grad():
                clock = time.perf_counter()
                stats = timing.time_calls(call, varied, int(req["trials"]), float(req["warmup_ms"]), flush)
                phases["timed_calls_s"] += time.perf_counter() - clock
                clock = time.perf_counter()
                if runner.launches.count - launches < int(req["trials"]):
                    raise Rejection("cheat_suspected", f"case {ci}: some timed calls launched no kernel")
                for i in sorted(sample):
                    args, scale = varied.prepare(i)
                    recorder = guards.OpRecorder(runner.allow_ops)
                    with recorder:
                        out = model(*args)
                    torch.cuda.synchronize()
                    recorded += recorder.violations
                    sent = handoff.send(_as_list(out), outdir / f"timed-{ci}-{i}.pt", req.get("handoff"),
                                        f"case {ci}, timed call {i}")
                    written.append({"case": ci, "seed": int(req["seeds"][i % len(sets)]), "distribution": "task",
                                    "scale": scale, **sent})
                varied.restore()
                phases["sampled_calls_s"] += time.perf_counter() - clock
                entry: dict[str, Any] = {"case": ci, "candidate": stats}
                if stats["median_ms"] < timing.GRAPH_BELOW_MS:
                    clock = time.perf_counter()
                    entry["graph"] = timing.time_graph_replay(call, sets[0])
                    phases["graph_s"] += time.perf_counter() - clock
            results.append(entry)
    finally:
        runner.audit.active = False
    runner._check_guards("timing")
    require_outputs_left_alone()
    if recorded:
        raise Rejection("cheat_suspected", f"timed calls ran torch ops {', '.join(sorted(set(recorded)))} that the "
                                           "checked calls did not: the kernels must do the math every time")
    return {"ok": True, "cases": results, "outputs": written,
            "phases": {k: round(v, 3) for k, v in phases.items()},
            "peak_gpu_memory_mb": torch.cuda.max_memory_allocated() / 2**20}


def reference_baselines(runner: ReferenceRunner, req: dict[str, Any]) -> dict[str, Any]:
    assert runner.task is not None
    sets_per_case = _input_sets(runner.task, runner.small, req["seeds"], "cuda", runner.inputs_dir, True)
    flush = timing.flush_buffer()
    bandwidth = timing.measure_copy_bandwidth()
    peak_flops = timing.measure_matmul_flops()
    eager = runner.model_native
    compiled: dict[str, Any] = {}
    notes: dict[str, str] = {}
    for mode in req["modes"]:
        if mode == "eager":
            continue
        inductor_mode = {"compile_default": "default", "compile_max_autotune": "max-autotune-no-cudagraphs"}[mode]
        torch._dynamo.reset()
        compiled[mode] = torch.compile(runner._build_model(), mode=inductor_mode)
    cases = []
    for ci, sets in enumerate(sets_per_case):
        entry: dict[str, Any] = {"case": ci}
        with torch.no_grad():
            varied = timing.VariedInputs(sets, random.Random())
            entry["eager"] = timing.time_calls(eager, varied, int(req["trials"]), float(req["warmup_ms"]), flush)
            for mode, fn in compiled.items():
                try:
                    entry[mode] = timing.time_calls(fn, varied, int(req["trials"]), float(req["warmup_ms"]), flush)
                except Exception as exc:  # a compile failure is a missing baseline, not a failed evaluation
                    notes[f"case {ci} {mode}"] = f"{type(exc).__name__}: {str(exc)[:200]}"
            if entry["eager"]["median_ms"] < timing.GRAPH_BELOW_MS:
                entry["eager_graph"] = timing.time_graph_replay(eager, sets[0])
            outputs = _as_list(eager(*sets[0]))
        entry["hbm_bytes"] = taskspec.hbm_bytes(runner.task, sets[0], outputs)
        flops_fn = getattr(runner.task.module, "flops", None)
        entry["flops"] = int(flops_fn(*sets[0])) if flops_fn else None
        entry["floor_ms"] = max(entry["hbm_bytes"] / bandwidth, (entry["flops"] or 0) / peak_flops) * 1e3
        cases.append(entry)
    return {"ok": True, "cases": cases, "copy_bandwidth_gbps": bandwidth / 1e9, "matmul_tflops": peak_flops / 1e12,
            "notes": notes}


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (tuple, list)) else [value]
