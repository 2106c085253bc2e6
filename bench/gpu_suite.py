"""Run the candidate suite (tests/candidates/manifest.yaml) on a GPU with one session per task.

``pytest -m gpu tests/evaluator/test_suite.py`` opens a session (reference process, baselines) per entry;
on a time-limited GPU lease this script evaluates the same entries grouped by task, so references and
baselines are computed once per task. Verdicts are checked against the manifest exactly as the test does.

    python bench/gpu_suite.py --out results.json [--skip-slow] [--only substring]
    python bench/gpu_suite.py --out rest.json --resume first.json   # the entries a time-boxed run did not reach

With ``--resume``, the entries already judged in an earlier run's results (partial or whole) are kept as they were
and not evaluated again; the output holds both, and says which run each came from.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CANDIDATES = ROOT / "tests" / "candidates"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--skip-slow", action="store_true", help="skip hang and memory-exhaustion entries")
    parser.add_argument("--only", default="", help="comma-separated substrings of candidate file names")
    parser.add_argument("--small", action="store_true", help="use the tasks' small cases (a quicker GPU pass)")
    parser.add_argument("--baselines", default="eager", help="baselines to time (eager,compile_default,...)")
    parser.add_argument("--parallel", type=int, default=1,
                        help="task groups evaluated side by side; each group is its own session, and sessions do "
                             "not share the GPU lock, so one group's timing and baselines overlap another's work: "
                             "above 1, timing-based verdicts (the physical floor, too_slow, the trace's time share) "
                             "can flip; use it only for a quick scan of false rejects")
    parser.add_argument("--resume", type=Path, action="append", default=[],
                        help="results of earlier (time-boxed) runs: their entries are kept, not evaluated again")
    args = parser.parse_args()

    os.chdir(ROOT)  # relative paths in verdicts: results carry no machine-specific paths
    from evaluator import EvalOptions, EvaluationSession

    sys.path.insert(0, str(CANDIDATES))
    from suite_manifest import load_entries

    entries = load_entries()
    earlier = _earlier_results(args.resume)
    groups: dict[tuple[str, bool, bool, bool], list[dict]] = defaultdict(list)
    for entry in entries:
        if "cuda" not in entry["devices"]:
            continue
        slow = "timeout" in entry["reasons"] or "memory" in entry["file"]
        if args.skip_slow and slow:
            continue
        if args.only and not any(s in entry["file"] for s in args.only.split(",")):
            continue
        # full_cases: entries whose exploit lives only at the scored sizes ignore --small
        small = args.small and not entry.get("full_cases", False)
        if (entry["file"], entry["task"], entry.get("static_checks", True)) in earlier:
            continue
        groups[(entry["task"], entry.get("static_checks", True), small, bool(entry.get("sanitize")))].append(entry)
    results = [dict(r, run=r.get("run") or path.name) for path, r in earlier.values()]
    failures = sum(not r["pass"] for r in results)
    started = time.perf_counter()
    from evaluator.session import _static_rejection

    lock = threading.Lock()

    def record(entry: dict, task: str, static: bool, verdict) -> None:
        with lock:
            _record(entry, task, static, verdict)

    def _record(entry: dict, task: str, static: bool, verdict) -> None:
        nonlocal failures
        ok = verdict.verdict == entry["expect"] and verdict.reason.value in entry["reasons"]
        failures += not ok
        results.append({"file": entry["file"], "task": task, "static_checks": static,
                        "expect": entry["expect"], "reasons": entry["reasons"], "verdict": verdict.verdict,
                        "reason": verdict.reason.value, "detail": verdict.detail[:400], "pass": ok,
                        "speedup_vs_best": verdict.timing.geomean_speedup_vs_best if verdict.timing else None,
                        "overhead_total_s": (verdict.overhead.model_dump() if hasattr(verdict.overhead, "model_dump")
                                             else dict(verdict.overhead)).get("total_s"),
                        "environment": verdict.environment.recorded()})
        print(f"{'PASS' if ok else 'FAIL'} {entry['file']} (static={static}): {verdict.verdict} "
              f"{verdict.reason.value} {verdict.detail[:150]}", flush=True)
        args.out.write_text(json.dumps({"partial": True, "results": results}, indent=2, default=str))

    # Entries the static checks refuse need no process at all: answered first, without opening a session.
    for key, group in groups.items():
        task, static = key[0], key[1]
        if not static:
            continue
        for entry in list(group):
            early = _static_rejection(Path("tests") / "tasks" / task, Path("tests") / "candidates" / entry["file"],
                                      "cuda", EvalOptions())
            if early is not None:
                group.remove(entry)
                record(entry, task, static, early)
    # Then the groups with honest entries (the false-reject rate matters most), then the rest.
    ordered = sorted(((k, g) for k, g in groups.items() if g),
                     key=lambda kg: (not any(e["expect"] == "accepted" for e in kg[1]), kg[0]))
    def run_group(key: tuple[str, bool, bool, bool], group: list[dict]) -> None:
        task, static, small, sanitize = key
        options = EvalOptions(static_checks=static, baselines=tuple(args.baselines.split(",")), timeout_s=120,
                              sanitize=sanitize, small_cases=True if small else None)
        with EvaluationSession(Path("tests") / "tasks" / task, device="cuda", options=options) as session:
            for entry in group:
                verdict = session.evaluate(Path("tests") / "candidates" / entry["file"])
                record(entry, task, static, verdict)

    with ThreadPoolExecutor(max_workers=max(1, args.parallel)) as pool:
        for future in [pool.submit(run_group, key, group) for key, group in ordered]:
            future.result()
    summary = {"entries": len(results), "failures": failures, "wall_s": round(time.perf_counter() - started, 1),
               "results": results}
    args.out.write_text(json.dumps(summary, indent=2, default=str))
    print(f"{len(results) - failures} passed, {failures} failed")
    return 1 if failures else 0


def _earlier_results(paths: list[Path]) -> dict[tuple[str, str, bool], tuple[Path, dict]]:
    """Entries judged by earlier runs, by (file, task, static checks); a later file's entry replaces an earlier
    one's."""
    kept: dict[tuple[str, str, bool], tuple[Path, dict]] = {}
    for path in paths:
        for result in json.loads(path.read_text())["results"]:
            kept[(result["file"], result["task"], result["static_checks"])] = (path, result)
    return kept


if __name__ == "__main__":
    sys.exit(main())
