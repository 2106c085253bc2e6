"""The public bench suite, end to end: for each op in bench/ops/*.py, baselines then a search.

    python bench/run.py --device cuda                       # the H200 run (fixed budget per op)
    python bench/run.py --device cpu --small                # smoke test on a CPU (Triton interpreter)
    python bench/run.py --ops rms_norm,swiglu --budget-candidates 16

For each op: an ``EvaluationSession`` measures the baselines (eager, torch.compile default and
max-autotune-no-cudagraphs), then ``run_search`` runs the offline proposer under the budget. Writes
``<out>/<op>.json`` (date, GPU, driver, torch, triton, budget, the result, the best kernel, the rejections
and where evaluation time went) and ``<out>/search_summary.json``, and prints a Markdown table (the one in
bench/README.md).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evaluator.verdict import Environment, Verdict

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

COLUMNS = ("op", "accepted", "vs eager", "vs compile", "HBM floor", "cand/GPU-min", "GPU busy", "eval busy",
           "1st accepted", "stop")


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def _verdict(record: dict[str, Any]) -> Verdict | None:
    """The verdict of a result's ``best`` or of an archive record (kept as JSON there), validated; None if none."""
    from evaluator.verdict import Verdict

    return Verdict.coerce(record.get("verdict"))


def bench_row(result: dict[str, Any]) -> dict[str, Any]:
    """The table row of one op from its search result (pure; None where nothing was measured)."""
    best = result.get("best") or {}
    verdict = _verdict(best)
    timing = verdict.timing if verdict is not None else None
    cases = timing.cases if timing is not None else []
    minutes = (result.get("elapsed_s") or 0) / 60
    return {
        "op": result["op_id"],
        "accepted": verdict is not None and verdict.accepted,
        "speedup_vs_eager": timing.geomean_speedup_vs_eager if timing else None,
        "speedup_vs_compile": timing.geomean_speedup_vs_compile if timing else None,
        "speedup_vs_best": timing.geomean_speedup_vs_best if timing else None,
        "hbm_floor_fraction": geomean([c.roofline_fraction for c in cases]),
        "candidates_per_gpu_minute": result["candidates_evaluated"] / minutes if minutes > 0 else None,
        "gpu_busy_fraction": result.get("gpu_busy_fraction"),  # NVML kernel-active mean (bench/_gpu_util.py)
        "evaluator_busy_fraction": result.get("evaluator_busy_fraction"),
        "time_to_first_accepted_s": result.get("time_to_first_accepted_s"),
        "candidates_evaluated": result["candidates_evaluated"],
        "stop_reason": result["stop_reason"],
        "cases": [{"case": c.case, "candidate_ms": c.candidate.median_ms,
                   "eager_ms": c.eager.median_ms if c.eager else None,
                   "compile_default_ms": c.compile_default.median_ms if c.compile_default else None,
                   "compile_max_autotune_ms": c.compile_max_autotune.median_ms if c.compile_max_autotune else None,
                   "floor_ms": c.floor_ms, "roofline_fraction": c.roofline_fraction} for c in cases],
    }


def rejections(candidates: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Rejected candidates by reason: how many, and the first one's id, strategy and detail (pure)."""
    tally: dict[str, dict[str, Any]] = {}
    for record in evaluated(candidates):
        verdict = _verdict(record)
        if verdict is None or verdict.accepted:
            continue
        entry = tally.setdefault(verdict.reason.value, {"count": 0, "first": {
            "id": record.get("id"), "strategy": record.get("strategy"), "detail": verdict.detail[:500]}})
        entry["count"] += 1
    return tally


def _seconds(value: Any) -> float | None:
    """``value`` as seconds, or None when it is not a finite number (bools, strings, NaN are skipped)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def evaluated(candidates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The archive records of candidates that were evaluated (a duplicate repeats its first's verdict)."""
    return [r for r in candidates if r.get("kind", "evaluated") == "evaluated"]


def handoff_modes(candidates: list[dict[str, Any]]) -> dict[str, int]:
    """How many evaluated candidates' outputs reached the reference each way (``vmm``, ``file``, or a file
    fallback with the VMM hand-off's error), from the verdicts' overhead (pure)."""
    modes: dict[str, int] = {}
    for record in evaluated(candidates):
        verdict = _verdict(record)
        mode = verdict.overhead.output_handoff if verdict is not None else None
        if mode is not None:
            modes[mode] = modes.get(mode, 0) + 1
    return modes


# nested per-phase seconds in a verdict's overhead (Overhead fields)
PHASE_GROUPS = ("load_phases", "check_phases", "time_phases")


def evaluation_costs(candidates: list[dict[str, Any]]) -> dict[str, Any]:
    """Where evaluation time went, over the evaluated candidates that recorded it (pure).

    ``n`` candidates with numbers; ``median`` and ``total`` seconds of ``eval_s`` (the search's wall
    time per candidate) and of each ``*_s`` entry of the verdict's ``overhead`` (load, check, judge,
    time, ...); ``check_phases_median`` / ``time_phases_median``: the median of each phase of those
    steps. Keys missing from some candidates are summarised over those that have them; empty input
    gives ``{"n": 0}``.
    """
    samples: dict[str, dict[str, list[float]]] = {"": {}, **{group: {} for group in PHASE_GROUPS}}
    n = 0
    for record in evaluated(candidates):
        verdict = _verdict(record)
        recorded = verdict.overhead.recorded() if verdict is not None else {}
        found = {"": {key: seconds for key, value in (("eval_s", record.get("eval_s")), *recorded.items())
                      if key.endswith("_s") and (seconds := _seconds(value)) is not None}}
        for group in PHASE_GROUPS:
            phases = getattr(verdict.overhead, group) if verdict is not None else {}
            found[group] = {key: seconds for key, value in phases.items() if (seconds := _seconds(value)) is not None}
        if not any(found.values()):
            continue
        n += 1
        for group, values in found.items():
            for key, seconds in values.items():
                samples[group].setdefault(key, []).append(seconds)
    if n == 0:
        return {"n": 0}
    top = samples[""]
    costs: dict[str, Any] = {"n": n, "median": {k: round(statistics.median(v), 3) for k, v in top.items()},
                             "total": {k: round(sum(v), 3) for k, v in top.items()}}
    for group in PHASE_GROUPS:
        if samples[group]:
            costs[f"{group}_median"] = {k: round(statistics.median(v), 3) for k, v in samples[group].items()}
    return costs


def costs_line(costs: dict[str, Any]) -> str:
    """One short line of median evaluation seconds (eval, check, judge, time) for the console."""
    if not costs.get("n"):
        return "no evaluation costs recorded"
    median = costs.get("median") or {}
    cells = ", ".join(f"{name} {_cell(median.get(f'{name}_s'), 's2')}" for name in ("eval", "check", "judge", "time"))
    return f"median per candidate ({costs['n']}): {cells}"


def _cell(value: Any, kind: str) -> str:
    if value is None:
        return "-"
    if kind == "x":
        return f"{value:.2f}x"
    if kind == "%":
        return f"{100 * value:.0f}%"
    if kind == "s":
        return f"{value:.1f} s"
    if kind == "s2":
        return f"{value:.2f} s"
    if kind == "f":
        return f"{value:.1f}"
    return str(value)


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """The results as the Markdown table of bench/README.md."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        cells = [r["op"], "yes" if r["accepted"] else "no", _cell(r["speedup_vs_eager"], "x"),
                 _cell(r["speedup_vs_compile"], "x"), _cell(r["hbm_floor_fraction"], "%"),
                 _cell(r["candidates_per_gpu_minute"], "f"), _cell(r["gpu_busy_fraction"], "%"),
                 _cell(r.get("evaluator_busy_fraction"), "%"),
                 _cell(r["time_to_first_accepted_s"], "s"), r["stop_reason"]]
        lines.append("| " + " | ".join(cells) + " |")
    vs_compile = geomean([r["speedup_vs_compile"] for r in rows])
    lines.append("")
    lines.append(f"Geomean vs torch.compile over ops with a timed kernel: {_cell(vs_compile, 'x')}")
    return "\n".join(lines)


def _environment(environment: dict[str, Any]) -> Environment:
    from evaluator.verdict import Environment

    return Environment.model_validate(environment)


def machine(environment: dict[str, Any]) -> dict[str, Any]:
    env = _environment(environment)
    return {"host": platform.node(), "platform": platform.platform(), "gpu": env.gpu, "driver": env.driver,
            "capability": env.capability, "sm_count": env.sm_count}


def versions(environment: dict[str, Any]) -> dict[str, Any]:
    from kernelevo import __version__

    env = _environment(environment)
    return {"python": platform.python_version(), "torch": env.torch, "triton": env.triton, "cuda": env.cuda_runtime,
            "kernelevo": __version__}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", choices=("cpu", "cuda"))
    parser.add_argument("--small", action="store_true", help="smoke budget (2 candidates per op); for CPU runs")
    parser.add_argument("--ops", default="", help="comma-separated op names (file stems); default: all")
    parser.add_argument("--proposer", default="offline")
    parser.add_argument("--budget-candidates", type=int, default=24)
    parser.add_argument("--budget-minutes", type=float, default=8.0, help="per op")
    parser.add_argument("--plateau", type=int, default=3, help="generations without improvement")
    parser.add_argument("--generation-size", type=int, default=8)
    parser.add_argument("--parallel-evaluations", type=int, default=0,
                        help="candidates judged at once (0: 3 on a GPU, 1 on CPU)")
    parser.add_argument("--output-handoff", default="auto", choices=("auto", "file"),
                        help="how outputs reach the reference: auto (CUDA VMM descriptors on a GPU) or file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None,
                        help="results folder [bench/results on cuda, bench/runs/cpu-results on cpu]")
    parser.add_argument("--runs", type=Path, default=ROOT / "bench" / "runs", help="run directories")
    args = parser.parse_args(argv)
    if args.out is None:
        args.out = ROOT / "bench" / ("results" if args.device == "cuda" else "runs/cpu-results")
    args.out, args.runs = args.out.resolve(), args.runs.resolve()

    from bench._gpu_util import GpuUtilisation
    from evaluator import EvalOptions
    from kernelevo.search.api import run_search
    from kernelevo.search.budget import Budget
    from kernelevo.search.config import SearchConfig
    from kernelevo.search.proposers import make_proposer
    from kernelevo.search.rundir import RunDir, reserve_run_dir

    wanted = {name.strip() for name in args.ops.split(",") if name.strip()}
    os.chdir(ROOT)  # paths in the results are relative to the checkout, not to this machine
    ops = sorted(p.relative_to(ROOT) for p in (ROOT / "bench" / "ops").glob("*.py") if not p.name.startswith("_"))
    ops = [p for p in ops if not wanted or p.stem in wanted]
    if not ops:
        print(f"bench/run.py: no ops matched {args.ops!r} in bench/ops/", file=sys.stderr)
        return 2
    if args.small:
        budget = Budget(candidates=2, minutes=args.budget_minutes, plateau_generations=1)
        config = SearchConfig(generation_size=2, islands=2)
    else:
        budget = Budget(candidates=args.budget_candidates, minutes=args.budget_minutes,
                        plateau_generations=args.plateau)
        config = SearchConfig(generation_size=args.generation_size, parallel_evaluations=args.parallel_evaluations)
    args.out.mkdir(parents=True, exist_ok=True)
    rows, started = [], time.perf_counter()
    for op in ops:
        run_dir = Path(os.path.relpath(reserve_run_dir(args.runs, op.stem, datetime.now(timezone.utc)), ROOT))
        print(f"[{op.stem}] searching ({args.device}); run directory {run_dir}", flush=True)
        try:
            with GpuUtilisation() as utilisation:
                result = run_search(op, op_id=op.stem, backend="triton", proposer=make_proposer(args.proposer),
                                    budget=budget, device=args.device, run_dir=run_dir, seed=args.seed, config=config,
                                    eval_options=EvalOptions(output_handoff=args.output_handoff))
        except Exception as exc:  # one broken op must not lose the others' results
            print(f"[{op.stem}] failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            rows.append({**bench_row({"op_id": op.stem, "candidates_evaluated": 0, "stop_reason": "error"}),
                         "error": f"{type(exc).__name__}: {exc}"})
            continue
        data = {**result.to_dict(), "gpu_busy_fraction": utilisation.fraction}
        row = bench_row(data)
        rows.append(row)
        candidates = RunDir(run_dir).candidates()
        costs = evaluation_costs(candidates)
        record = {
            "benchmark": "search", "op": op.stem, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "device": args.device, "machine": machine(result.environment), "versions": versions(result.environment),
            "budget": budget.to_dict(), "config": config.to_dict(), "seed": args.seed, "proposer": args.proposer,
            "row": row, "baselines": result.baselines, "search": {k: v for k, v in data.items() if k != "best"},
            "best": data.get("best"), "note": result.note,
            "rejections": rejections(candidates), "evaluation_costs": costs,
            "output_handoff": handoff_modes(candidates),
        }
        (args.out / f"{op.stem}.json").write_text(json.dumps(record, indent=2, default=str) + "\n")
        print(f"[{op.stem}] {row['stop_reason']}: {row['candidates_evaluated']} candidates,"
              f" accepted={row['accepted']}", flush=True)
        print(f"[{op.stem}] {costs_line(costs)}", flush=True)
    summary = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "device": args.device,
               "wall_s": round(time.perf_counter() - started, 1), "rows": rows}
    (args.out / "search_summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    print(markdown_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
