"""The timing requests of the two worker roles: a candidate's timing, and the task's baselines.

Both sides build the same rotating input sets from the same seeds, so the candidate and eager /
torch.compile are timed on identical inputs. A secret random sample of the candidate's timed calls is
run under the op recorder, excluded from the statistics, and written to disk for the reference process
to re-validate: a kernel that behaves well only while it is being checked is caught there.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from evaluator.sandboxed import guards, handoff, taskspec, timing
from evaluator.sandboxed.output_checks import Rejection, output_list

if TYPE_CHECKING:
    from evaluator.sandboxed.reference import ReferenceRunner


def _timing_sets(task: taskspec.LoadedTask, small: bool,
                 seeds: list[int]) -> tuple[list[list[list[Any]]], list[torch.Tensor]]:
    """sets[case][k]: the k-th timing input set of each case (seed ``seeds[k]``, the task's own draw), on the CPU;
    and the CPU generator's state after each seed's draw."""
    per_seed, states = [], []
    for seed in seeds:
        per_seed.append(taskspec.generate_cases(task, small, int(seed), "task"))
        states.append(torch.get_rng_state())
    return [[per_seed[k][ci] for k in range(len(seeds))] for ci in range(len(per_seed[0]))], states


@dataclass(frozen=True)
class TimedCandidate:
    """What timing needs from the candidate process's harness (bound there before the candidate was imported)."""

    model: Any
    launches: guards.LaunchCounter
    audit: guards.AuditGuard
    allow_ops: tuple[str, ...]
    own_ops: frozenset[str]
    outbox: handoff.Outbox
    outdir: Path
    check_guards: Callable[[str], None]
    mark: Callable[[Any, Any, int], None]  # a window edge in the kernel trace (see evaluator.tracing.tags)
    trial_kind: Any
    begin: Any
    end: Any


TRIAL_STRIDE = 1_000_000  # trial windows of case c are numbered c * TRIAL_STRIDE + trial


def candidate_time(timed: TimedCandidate, sets_per_case: list[list[list[Any]]], req: dict[str, Any]) -> dict[str, Any]:
    """Time the candidate on each case's rotating input sets; the outputs of a secret sample of the timed calls
    (``req["sample"]``: trial numbers and output names chosen by the parent) are handed over for re-validation
    as those calls return. Nothing sets the sampled calls apart before their outputs exist (no recorder, no
    extra synchronisation, the same inputs path); what ran during every timed call is the kernel trace's
    question."""
    model = timed.model
    phases = {"inputs_s": 0.0, "timed_calls_s": 0.0, "graph_s": 0.0}
    clock = time.perf_counter()
    sets_per_case = [[[v.to("cuda") if isinstance(v, torch.Tensor) else v for v in inputs] for inputs in sets]
                     for sets in sets_per_case]
    phases["inputs_s"] = time.perf_counter() - clock
    flush = timing.flush_buffer()
    samples = {int(s["case"]): {int(t): str(n) for t, n in zip(s["trials"], s["names"])} for s in req["sample"]}

    def call(*inputs: Any) -> Any:
        return model(*inputs)

    results: list[dict[str, Any]] = []
    sent: dict[str, Any] = {}
    trial_ms: dict[int, Any] = {}
    rng = random.Random()  # secret: the candidate cannot predict the scales
    timed.audit.active = True
    try:
        for ci, sets in enumerate(sets_per_case):
            varied = timing.VariedInputs(sets, rng)
            launches = timed.launches.count
            with torch.no_grad():
                clock = time.perf_counter()
                mark, keep = _trial_hooks(timed, ci, samples.get(ci, {}), sent)
                stats = timing.time_calls(call, varied, int(req["trials"]), float(req["warmup_ms"]), flush, mark=mark,
                                          keep=keep)
                trial_ms[ci] = stats.pop("samples_ms")
                phases["timed_calls_s"] += time.perf_counter() - clock
                if timed.launches.count - launches < int(req["trials"]):
                    raise Rejection("cheat_suspected", f"case {ci}: some timed calls launched no kernel")
                entry: dict[str, Any] = {"case": ci, "candidate": stats}
                if stats["median_ms"] < timing.GRAPH_BELOW_MS:
                    clock = time.perf_counter()
                    entry["graph"] = timing.time_graph_replay(call, sets[0])
                    phases["graph_s"] += time.perf_counter() - clock
            results.append(entry)
    finally:
        timed.audit.active = False
    timed.check_guards("timing")
    return {"ok": True, "cases": results, "sent": sent, "trial_ms": trial_ms,
            "phases": {k: round(v, 3) for k, v in phases.items()},
            "peak_gpu_memory_mb": torch.cuda.max_memory_allocated() / 2**20}


def _trial_hooks(timed: TimedCandidate, ci: int, chosen: dict[int, str],
                 sent: dict[str, Any]) -> tuple[Callable[[int, bool], None], Callable[[int, Any, float], None]]:
    """The timed loop's window marks and output sampling for case ``ci``. The secret sample (``chosen``: trial ->
    output name) lives in the closures' cells, never in default arguments, which ``inspect.signature`` would hand
    to anyone holding the function (tests/test_architecture.py holds the harness to that)."""

    def mark(trial: int, begin: bool) -> None:
        timed.mark(timed.trial_kind, timed.begin if begin else timed.end, ci * TRIAL_STRIDE + trial)

    def keep(trial: int, out: Any, scale: float) -> None:
        name = chosen.get(trial)
        if name is not None:
            where = f"case {ci}, timed call {trial}"
            item = timed.outbox.send(output_list(out, where), timed.outdir / f"{name}.pt", where)
            sent[name] = {**item, "scale": scale}

    return mark, keep


def reference_baselines(runner: ReferenceRunner, req: dict[str, Any]) -> dict[str, Any]:
    assert runner.task is not None
    host_sets, states = _timing_sets(runner.task, runner.small, req["seeds"])
    files = [[runner._write_inputs(inputs) for inputs in sets] for sets in host_sets]  # for candidate processes
    runner.timing_inputs = {(ci, int(seed)): (path, state) for ci, paths in enumerate(files)
                            for seed, path, state in zip(req["seeds"], paths, states)}
    sets_per_case = [[[v.to("cuda") if isinstance(v, torch.Tensor) else v for v in inputs] for inputs in sets]
                     for sets in host_sets]
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
            "notes": notes, "timing_inputs": files}


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (tuple, list)) else [value]
