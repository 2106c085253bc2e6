"""Run the public corpus (honest kernels from installed PyPI libraries, tests/public_corpus/) through the verifier.

Each entry's candidate is the library's kernel module pasted verbatim plus a small adapter; every one is honest
and correct, so every rejection is a false reject. One ``EvaluationSession`` per task. Prints a table and the
false-reject rate, writes a JSON report (per candidate: library, version, module, op, verdict, reason, detail,
the first static finding's library line, every static finding; totals) to --out.

    python bench/public_corpus.py --device cpu --out corpus_cpu.json
    python bench/public_corpus.py --device cuda --out bench/results/public_corpus_h200.json
    python bench/public_corpus.py --device cpu --out runtime.json --runtime-only   # what the runtime layers say

``--runtime-only`` turns the static checks off (``EvalOptions(static_checks=False)``), to see which entries the
run-time guards, the interpreter or the tolerances would refuse once the static checker lets them through.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "public_corpus"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", default="", help="comma-separated substrings of entry ids")
    parser.add_argument("--runtime-only", action="store_true", help="static checks off (runtime layers only)")
    parser.add_argument("--small", action="store_true", help="on cuda, use the tasks' small cases")
    parser.add_argument("--timeout", type=float, default=300.0, help="wall-clock limit per phase, seconds")
    args = parser.parse_args()

    os.chdir(ROOT)  # relative paths in verdicts: reports carry no machine-specific paths
    from corpus_entries import ENTRIES
    from corpus_run import build_all, evaluate_group

    from evaluator import EvalOptions

    entries = [e for e in ENTRIES if not args.only or any(s in e.id for s in args.only.split(","))]
    options = EvalOptions(static_checks=not args.runtime_only, timeout_s=args.timeout,
                          baselines=("eager", "compile_default"),
                          small_cases=True if args.small else None)
    groups: dict[str, list] = defaultdict(list)
    for entry in entries:
        groups[entry.task].append(entry)
    started = time.perf_counter()
    outcomes, environment = [], {}
    with tempfile.TemporaryDirectory(prefix="kernelevo-corpus-") as tmp:
        built = build_all(entries, Path(tmp))
        for task, group in groups.items():
            done, env = evaluate_group(ROOT / task, group, built, args.device, options)
            environment = environment or env
            for outcome in done:
                outcomes.append(outcome)
                print(_row(outcome), flush=True)
            _write(args, outcomes, environment, started, partial=True)
    report = _write(args, outcomes, environment, started, partial=False)
    print(f"\n{report['totals']['passed']} passed, {report['totals']['failed']} failed; false rejects "
          f"{report['totals']['false_rejects']}/{report['totals']['evaluated']} "
          f"(rate {report['false_reject_rate']:.0%})")
    return 0 if report["totals"]["failed"] == 0 else 1


def _row(o) -> str:
    where = f" @ {o.first_origin}: {o.first_source_line[:80]}" if o.first_origin else ""
    return (f"{'PASS' if o.passed else 'FAIL'} {o.id:<28} {o.task:<44} expected {o.expected.value:<9} got "
            f"{o.answer.value:<11} {o.reason:<17} {o.detail[:140]}{where}")


def _write(args, outcomes, environment: dict, started: float, partial: bool) -> dict:
    evaluated = [o for o in outcomes if o.answer.value != "not_built"]
    false_rejects = [o for o in evaluated if o.false_reject]
    libraries = {o.library: o.version for o in outcomes}
    report = {
        "partial": partial,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": args.device,
        "static_checks": not args.runtime_only,
        "libraries": libraries, "environment": environment,
        "wall_s": round(time.perf_counter() - started, 1),
        "totals": {"entries": len(outcomes), "evaluated": len(evaluated),
                   "passed": sum(o.passed for o in outcomes), "failed": sum(not o.passed for o in outcomes),
                   "false_rejects": len(false_rejects), "not_built": len(outcomes) - len(evaluated)},
        "false_reject_rate": len(false_rejects) / len(evaluated) if evaluated else 0.0,
        "entries": [{**o.model_dump(mode="json"), "passed": o.passed, "false_reject": o.false_reject}
                    for o in outcomes],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str))
    return report


if __name__ == "__main__":
    sys.exit(main())
