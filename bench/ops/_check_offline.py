"""Check the offline proposer on the bench ops: every strategy's candidate through the verifier.

    python bench/ops/_check_offline.py --device cpu                  # Triton interpreter, small cases
    python bench/ops/_check_offline.py --device cuda --out results.json
    python bench/ops/_check_offline.py --ops-dir ~/held-out --device cpu   # any folder of KernelBench files

Per op: one ``EvaluationSession`` (baselines once), then each applicable strategy's candidate.
Prints one line per candidate and writes JSON with the verdicts (date, machine, versions).
Not a test: it is how the proposers' coverage claim in the report was measured.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def no_candidate_reason(strategies: list[str], skip: set[str], error: str | None) -> str:
    """Why an op gets no candidate in this run: every strategy that fits it was skipped (``--skip``), or the
    offline proposer has none for it (its reason: the ATen op and its line). Pure."""
    if strategies:
        return (f"no strategy run: all {len(strategies)} that fit were skipped by --skip "
                f"({', '.join(s for s in strategies if s in skip)})")
    return f"no strategy: {error or 'the offline proposer gave no reason'}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--ops", default="", help="comma-separated op names (default: all)")
    parser.add_argument("--ops-dir", default=str(ROOT / "bench" / "ops"),
                        help="folder of task files (default: the bench suite); files starting with _ are skipped")
    parser.add_argument("--skip", default="", help="comma-separated strategies to skip")
    parser.add_argument("--out", default="", help="write the JSON here")
    parser.add_argument("--baselines", default="eager,compile_default,compile_max_autotune")
    args = parser.parse_args()

    import torch
    import triton

    from evaluator import EvalOptions, EvaluationSession
    from kernelevo.search.offline import OfflineProposer
    from kernelevo.search.proposer import ProposalRequest

    wanted = {o for o in args.ops.split(",") if o}
    skip = {s for s in args.skip.split(",") if s}
    ops = sorted(p for p in Path(args.ops_dir).expanduser().glob("*.py") if not p.name.startswith("_"))
    ops = [p for p in ops if not wanted or p.stem in wanted]
    proposer = OfflineProposer()
    options = EvalOptions(baselines=tuple(b for b in args.baselines.split(",") if b))
    results = []
    for task in ops:
        source = task.read_text()
        strategies = proposer.strategies(source)
        cells = [c for c in strategies if c not in skip]
        if not cells:
            error = None if strategies else proposer.propose(ProposalRequest(task.stem, source))[0].error
            why = no_candidate_reason(strategies, skip, error)
            print(f"{task.stem:22s} {why}", flush=True)
            results.append({"op": task.stem, "error": why} if not strategies else
                           {"op": task.stem, "skipped": strategies, "note": why})
            continue
        start = time.time()
        with EvaluationSession(os.path.relpath(task), device=args.device, options=options) as session:
            for i, cell in enumerate(proposer.strategies(source)):
                if cell in skip:
                    continue
                [p] = proposer.propose(ProposalRequest(task.stem, source, seed=i, count=1))
                t0 = time.time()
                v = session.evaluate_source(p.source, name=f"{task.stem}-{p.strategy}")
                timing = v.timing
                eager, compiled, best = ((timing.geomean_speedup_vs_eager, timing.geomean_speedup_vs_compile,
                                          timing.geomean_speedup_vs_best) if timing else (None, None, None))
                line = (f"{task.stem:22s} {p.strategy:18s} {v.verdict:8s} {v.reason.value:14s} "
                        f"eager x{eager or 0:.2f} compile x{compiled or 0:.2f} best x{best or 0:.2f} "
                        f"({time.time() - t0:.0f}s)")
                print(line, flush=True)
                if not v.accepted:
                    print("    " + v.detail[:400], flush=True)
                results.append({"op": task.stem, "strategy": p.strategy, "verdict": v.to_dict()})
        print(f"{task.stem:22s} session {time.time() - start:.0f}s", flush=True)
        if args.out:  # after every op, so a run cut short still leaves its results
            env = {"date": datetime.now(timezone.utc).isoformat(), "machine": platform.node(),
                   "device": torch.cuda.get_device_name(0) if args.device == "cuda" else platform.processor(),
                   "torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version()}
            Path(args.out).write_text(json.dumps({"environment": env, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
