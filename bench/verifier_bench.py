"""Measure the verifier on a GPU: verdicts of honest Triton and CUDA candidates, throughput, overhead,
and the spread of timing across two evaluations of the same candidate.

    python bench/verifier_bench.py --out bench/results/verifier --device cuda

Writes one verdict JSON per evaluation and ``summary.json`` (date, GPU, driver, torch, triton) to --out.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# (task, [candidates]) — honest kernels of three styles per op: Triton, kernelevo.cuda (NVRTC), load_inline.
PLAN = [
    ("tests/tasks/axpy.py", ["tests/candidates/honest/axpy_launcher.py", "tests/candidates/honest/axpy_cuda.py"]),
    ("tests/tasks/rmsnorm.py", ["tests/candidates/honest/rmsnorm_multirow.py",
                                "tests/candidates/honest/rmsnorm_cuda.py"]),
    ("tests/tasks/softmax.py", ["tests/candidates/honest/softmax_online.py",
                                "tests/candidates/honest/softmax_load_inline.py"]),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "verifier")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--repeats", type=int, default=2, help="evaluations of each candidate (timing spread)")
    parser.add_argument("--only", default="", help="substring filter on task paths")
    parser.add_argument("--ready", type=int, default=None,
                        help="candidate processes started ahead (EvalOptions.ready_workers; default: what a search "
                             "of one evaluation in flight keeps, evaluator.options.ready_workers_for)")
    parser.add_argument("--cost", nargs=2, type=Path, metavar=("BEFORE_ROWS", "AFTER_ROWS"),
                        help="compare two runs' rows.json (an older verifier's and this one's, same card) and write "
                             "the cost per evaluation to --out/cost.json instead of evaluating")
    parser.add_argument("--gpu", type=Path, help="with --cost: the GPU and version lines of bench/device_run.sh")
    parser.add_argument("--plain-run", action="store_true",
                        help="run every accepted candidate once more in a plain process (kernelevo eval's default; "
                             "a search runs it on its winner only, so per-evaluation costs leave it off)")
    args = parser.parse_args()

    if args.cost:
        args.out.mkdir(parents=True, exist_ok=True)
        cost = cost_per_evaluation(json.loads(args.cost[0].read_text()), json.loads(args.cost[1].read_text()))
        cost["sources"] = [str(p) for p in args.cost]
        cost["gpu"] = args.gpu.read_text().strip().splitlines() if args.gpu else None
        (args.out / "cost.json").write_text(json.dumps(cost, indent=2))
        print(json.dumps(cost, indent=2))
        return
    os.chdir(ROOT)  # relative paths in verdicts: results carry no machine-specific paths
    from evaluator import EvalOptions, EvaluationSession
    from evaluator.options import ready_workers_for

    if args.ready is None:
        args.ready = ready_workers_for(args.device, 1)

    args.out.mkdir(parents=True, exist_ok=True)
    rows, environment, costs = [], {}, []
    wall_start = time.perf_counter()
    evaluations = 0
    for task, candidates in PLAN:
        if args.only and args.only not in task:
            continue
        t0 = time.perf_counter()
        with EvaluationSession(task, device=args.device, options=EvalOptions(ready_workers=args.ready,
                                                                           plain_run=args.plain_run)) as session:
            session_setup_s = time.perf_counter() - t0
            environment = session.environment
            for cand in candidates:
                if args.device == "cpu" and ("cuda" in cand or "load_inline" in cand):
                    continue  # GPU-only candidates
                medians = []
                for rep in range(args.repeats):
                    verdict = session.evaluate(cand)
                    evaluations += 1
                    costs.append(verdict.overhead)
                    name = f"{Path(task).stem}--{Path(cand).stem}--{rep}"
                    (args.out / f"{name}.json").write_text(verdict.to_json())
                    timing = verdict.timing
                    medians.append([c.candidate.median_ms for c in timing.cases] if timing else [])
                    rows.append({
                        "task": task, "candidate": cand, "repeat": rep, "verdict": verdict.verdict,
                        "reason": verdict.reason.value, "detail": verdict.detail[:300], "backend": verdict.backend,
                        "speedup_vs_eager": timing.geomean_speedup_vs_eager if timing else None,
                        "speedup_vs_compile": timing.geomean_speedup_vs_compile if timing else None,
                        "overhead": verdict.overhead.recorded(), "session_setup_s": round(session_setup_s, 2),
                    })
                    print(f"{name}: {verdict.verdict} {verdict.reason.value} {verdict.detail[:160]}", flush=True)
                    (args.out / "rows.json").write_text(json.dumps(rows, indent=2, default=str))
                if len(medians) == 2 and medians[0] and len(medians[0]) == len(medians[1]):
                    spread = [abs(a - b) / min(a, b) for a, b in zip(medians[0], medians[1])]
                    rows[-1]["repeat_spread_pct"] = [round(100 * s, 2) for s in spread]
    wall = time.perf_counter() - wall_start
    overheads = [(o.waited_for_process_s or 0.0) + (o.load_s or 0.0) for o in costs]
    totals = [o.total_s or 0.0 for o in costs]
    plain = [float(o.recorded().get("plain_run_s") or 0.0) for o in costs if o.recorded().get("plain_run_s")]
    summary = {
        "environment": environment,
        "evaluations": evaluations,
        "ready_workers": args.ready,
        "wall_s": round(wall, 1),
        "evaluations_per_minute_including_session_setup": round(60 * evaluations / wall, 2),
        "evaluations_per_minute_steady": round(60 / statistics.mean(totals), 2) if totals else None,
        "per_candidate_overhead_s_median": round(statistics.median(overheads), 3) if overheads else None,
        "per_candidate_total_s_median": round(statistics.median(totals), 3) if totals else None,
        "plain_run": args.plain_run,
        "plain_run_s_median": round(statistics.median(plain), 3) if plain else None,
        "rows": rows,
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    print(json.dumps({k: v for k, v in summary.items() if k != "rows"}, indent=2, default=str))


def cost_per_evaluation(before: list[dict], after: list[dict], target: float = 1.10) -> dict:
    """The verifier's cost per evaluation on the evaluations both runs made (task, candidate, repeat): the whole
    evaluation, its guarded part (without the plain run) and the plain run, against ``before``'s; and since a
    search runs the plain run on its winner only, the fewest evaluations a search must make for its cost per
    evaluation, winner's plain run included, to stay within ``target`` times ``before``'s."""
    def key(row: dict) -> tuple:
        return row["task"], row["candidate"], row["repeat"]

    old = {key(r): float(r["overhead"]["total_s"]) for r in before if r.get("overhead", {}).get("total_s")}
    both = [r for r in after if key(r) in old and r.get("overhead", {}).get("total_s")]
    if not both:
        return {"evaluations": 0}
    n = len(both)
    total = sum(float(r["overhead"]["total_s"]) for r in both)
    plain = sum(float(r["overhead"].get("plain_run_s") or 0.0) for r in both)
    base = sum(old[key(r)] for r in both)
    phases: dict[str, float] = {}
    for r in both:
        for name, value in (r["overhead"].get("plain_phases") or {}).items():
            phases[name] = round(phases.get(name, 0.0) + float(value), 3)
    guarded, plain_each, base_each = (total - plain) / n, plain / n, base / n
    # guarded * N + plain_each <= target * base_each * N
    room = target * base_each - guarded
    break_even = math.ceil(plain_each / room) if room > 0 else None
    return {
        "evaluations": n, "evaluated": sorted({f"{r['task']}: {r['candidate']}" for r in both}),
        "before_s_per_evaluation": round(base_each, 3), "after_s_per_evaluation": round(total / n, 3),
        "guarded_s_per_evaluation": round(guarded, 3), "plain_run_s_per_evaluation": round(plain_each, 3),
        "ratio_with_plain_run": round(total / base, 3), "ratio_guarded_only": round((total - plain) / base, 3),
        "plain_phases_s_sum": phases, "target_ratio": target,
        "search_evaluations_to_meet_target": break_even,
    }


if __name__ == "__main__":
    main()
