"""Run directories for the report tests, written as the search writes them (run.json, summary.json, archive.jsonl,
target.json, best/), with verdicts that validate as the verifier's model: a timed H200-like run, a failed run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evaluator.verdict import Verdict

REASONS = ["incorrect", "incorrect", "compile_error", "static_violation", "too_slow"]


def stats(ms: float, spread: float = 0.02) -> dict[str, Any]:
    return {"median_ms": ms, "p25_ms": ms * (1 - spread), "p75_ms": ms * (1 + spread), "min_ms": ms * 0.97, "n": 100}


def timed_verdict(n_cases: int = 3, speedup: float = 1.6, *, drop_baseline: bool = False) -> dict[str, Any]:
    """An accepted, timed verdict: case i's kernel takes 0.1*(i+1) ms, torch.compile ``speedup`` times that."""
    cases, timing = [], []
    for i in range(n_cases):
        kernel = 0.1 * (i + 1) + 0.0123
        row = {"case": i, "candidate": stats(kernel), "eager": stats(kernel * 3.1 * speedup),
               "compile_default": stats(kernel * speedup * 1.07), "compile_max_autotune": stats(kernel * speedup),
               "floor_ms": kernel * 0.7, "roofline_fraction": 0.7, "speedup_vs_eager": 3.1 * speedup,
               "speedup_vs_compile": speedup, "speedup_vs_best": speedup}
        if drop_baseline and i == 0:
            del row["compile_max_autotune"]
        timing.append(row)
        checks = [{"check": n, "phase": "correctness", "distribution": d, "ok": True,
                   "max_abs_err": 1e-6 * (i + 1) * n, "max_rel_err": 2e-5 * (i + 1) * n, "rel_l2_err": 1e-7}
                  for n, d in enumerate(["task", "signed", "wide"], 1)]
        cases.append({"case": i, "inputs": [{"shape": [4096 * (i + 1), 1024], "dtype": "torch.bfloat16"},
                                            {"shape": [1024], "dtype": "torch.bfloat16"}],
                      "outputs": [{"shape": [4096 * (i + 1), 1024], "dtype": "torch.bfloat16"}],
                      "tolerance": [{"atol": 0.01, "rtol": 0.01, "rel": 0.001}], "checks": checks})
    verdict = Verdict.accept(
        "correct on 3 case(s) x 3 seeds and clean", task="task.py", candidate="c", device="cuda:0", backend="triton",
        static={"kernels": ["rms_kernel"], "launched": ["rms_kernel"]},
        correctness={"seeds": 3, "distributions": ["task", "signed", "wide"], "reference_precision": "float64",
                     "checks": ["static AST checks", "NaN-poisoned allocations on some calls"], "cases": cases},
        timing={"cases": timing, "geomean_speedup_vs_eager": 3.1 * speedup, "geomean_speedup_vs_compile": speedup,
                "geomean_speedup_vs_best": speedup, "copy_bandwidth_gbps": 4247.4, "method": "CUDA events"},
        resources={"rms_kernel": {"registers": 34, "spills": 0, "num_warps": 8}},
        environment={"gpu": "NVIDIA H200", "driver": "580.159.04", "cuda_runtime": "13.0", "torch": "2.11.0+cu130",
                     "triton": "3.6.0", "capability": "9.0", "sm_count": 132, "host": "gpu-node-7"})
    assert verdict.accepted, verdict.detail
    return verdict.to_dict()


def rejected_verdict(reason: str) -> dict[str, Any]:
    return Verdict.reject(reason, f"case 0: {reason} (details)", device="cuda:0", backend="triton").to_dict()


def archive(winner: dict[str, Any] | None, tokens: bool = True) -> list[dict[str, Any]]:
    records, elapsed = [], 0.0
    for n, reason in enumerate(REASONS):
        elapsed += 3.0
        records.append({"id": f"g0-{n}", "generation": 0, "island": n % 4, "operator": "fresh", "parent_ids": [],
                        "strategy": "rowwise", "kind": "evaluated", "fitness": 0.0, "accepted": False,
                        "tokens_in": 1000 if tokens else 0, "tokens_out": 400 if tokens else 0, "cost_usd": 0.01,
                        "run_elapsed_s": elapsed, "verdict": rejected_verdict(reason)})
    if winner is not None:
        for n, (parent, fitness) in enumerate([(None, 1.2), ("g1-0", 1.4), ("g2-0", 1.6)]):
            elapsed += 3.0
            records.append({"id": f"g{n + 1}-0", "generation": n + 1, "operator": "fresh" if parent is None else "tune",
                            "parent_ids": [parent] if parent else [], "strategy": "rowwise-1pass", "kind": "evaluated",
                            "fitness": fitness, "accepted": True, "tokens_in": 1200 if tokens else 0,
                            "tokens_out": 500 if tokens else 0, "cost_usd": 0.02, "run_elapsed_s": elapsed,
                            "verdict": winner})
        records.append({"id": "g4-0", "kind": "duplicate", "duplicate_of": "g3-0", "fitness": 1.6, "accepted": True,
                        "tokens_in": 0, "tokens_out": 0, "run_elapsed_s": elapsed + 0.1})
    return records


def write_run(path: Path, *, op_id: str = "ops/norm.py::rms_norm", n_cases: int = 3, speedup: float = 1.6,
              accepted: bool = True, drop_baseline: bool = False, strategy: str | None = None) -> Path:
    """A finished run directory like ``kernelevo optimize --device cuda`` leaves."""
    path.mkdir(parents=True)
    winner = timed_verdict(n_cases, speedup, drop_baseline=drop_baseline) if accepted else None
    records = archive(winner)
    if strategy is not None:
        for record in records:
            record["strategy"] = strategy
    meta = {"op_id": op_id, "task_path": str(path / "task.py"), "backend": "triton", "device": "cuda", "seed": 3,
            "proposer": "llm", "budget": {"candidates": 16, "minutes": None, "tokens": 100000, "usd": None}}
    (path / "run.json").write_text(json.dumps(meta))
    (path / "task.py").write_text("# task\n")
    (path / "archive.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (path / "target.json").write_text(json.dumps({"op": {"op_id": op_id, "path": op_id.partition("::")[0],
                                                         "qualname": op_id.partition("::")[2], "line": 12}}))
    judged = [r for r in records if r["kind"] == "evaluated"]
    best = None
    if winner is not None:
        best = {"id": "g3-0", "source": "import triton\nclass ModelNew:\n    pass\n", "verdict": winner,
                "fitness": speedup}
        (path / "best").mkdir()
        (path / "best" / "kernel.py").write_text(best["source"])
    summary = {"op_id": op_id, "run_dir": str(path), "stop_reason": "plateau" if accepted else "budget_candidates",
               "best": best, "candidates_evaluated": len(judged),
               "candidates_accepted": sum(r["accepted"] for r in judged),
               "tokens_in": sum(r["tokens_in"] for r in records), "tokens_out": sum(r["tokens_out"] for r in records),
               "cost_usd": 0.11, "evaluator_busy_fraction": 1.7, "baselines": None,
               "started": "2026-11-30T12:00:00+00:00",
               "ended": "2026-11-30T12:01:00+00:00", "time_to_first_accepted_s": 18.0 if accepted else None,
               "device": "cuda", "timed": True,
               "generations": 4, "elapsed_s": 60.0, "duplicates": 1, "proposal_errors": 0,
               "environment": {"gpu": "NVIDIA H200", "torch": "2.11.0+cu130", "triton": "3.6.0"},
               "budget": meta["budget"], "seed": 3}
    (path / "summary.json").write_text(json.dumps(summary))
    return path
