"""bench/celery_throughput.py's merging of runs split over device calls (pure functions, no Redis or GPU)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("celery_throughput", ROOT / "bench" / "celery_throughput.py")
assert _spec and _spec.loader
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

MACHINE = {"benchmark": "celery_throughput", "machine": {"hostname": "vm"}, "device": "cuda",
           "gpu": {"name": "NVIDIA H200", "driver": "580"}, "versions": {"torch": "2.11"}, "budget_candidates": 8,
           "seed": 0, "date": "2026-12-02T05:00:00+00:00"}


def side(per_minute: float, search_s: float = 60.0) -> dict:
    return {"candidates_per_minute": per_minute, "search_s": search_s, "evaluated": 8, "chunks": 1}


def write(tmp_path: Path, name: str, rows: list[dict], **extra) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({**MACHINE, "partial": False, "rows": rows, **extra}))
    return path


def test_an_ops_two_paths_from_two_runs_pair_into_one_row(tmp_path):
    first = write(tmp_path, "a.json", [{"op": "swiglu", "in_process": side(2.0)}], partial=True)
    second = write(tmp_path, "b.json", [{"op": "swiglu", "celery": side(1.8)},
                                        {"op": "rms_norm", "in_process": side(4.0), "celery": side(4.0)}])
    assert bench.combine([first, second], tmp_path / "out") == 0
    report = json.loads((tmp_path / "out" / "celery_throughput.json").read_text())
    rows = {row["op"]: row for row in report["rows"]}
    assert rows["swiglu"]["ratio"] == pytest.approx(0.9)
    assert rows["swiglu"]["from"] == {"in_process": str(first), "celery": str(second)}
    assert report["geomean_ratio"] == pytest.approx((0.9 * 1.0) ** 0.5)


def test_a_path_measured_twice_is_refused(tmp_path):
    first = write(tmp_path, "a.json", [{"op": "swiglu", "in_process": side(2.0), "celery": side(2.0)}])
    second = write(tmp_path, "b.json", [{"op": "swiglu", "celery": side(1.0)}])
    with pytest.raises(SystemExit, match="swiglu: the celery path is in .*a.json and in .*b.json"):
        bench.combine([first, second], tmp_path / "out")


def test_an_op_left_with_one_path_is_refused(tmp_path):
    only = write(tmp_path, "a.json", [{"op": "layer_norm", "in_process": side(2.0)}], partial=True)
    with pytest.raises(SystemExit, match=r"layer_norm \(celery\).*--paths"):
        bench.combine([only], tmp_path / "out")


def test_runs_of_different_gpus_are_not_one_measurement(tmp_path):
    first = write(tmp_path, "a.json", [{"op": "swiglu", "in_process": side(2.0)}])
    second = write(tmp_path, "b.json", [{"op": "swiglu", "celery": side(2.0)}], gpu={"name": "NVIDIA H100"})
    with pytest.raises(SystemExit, match="gpu differ"):
        bench.combine([first, second], tmp_path / "out")


def test_the_phase_table_accounts_for_the_wall_time():
    phases = {"session_start_s": 50.0, "baselines_s": 40.0, "search_s": 100.0, "sanitize_s": 20.0}
    rows = [{"op": "swiglu", "in_process": {**side(2.0), "process_wall_s": 180.0, "phases": phases},
             "celery": {**side(2.0), "job_wall_s": 175.0}}]
    table = bench.phase_table(rows).splitlines()
    assert table[2] == "| swiglu | in-process | 180.0 | 50.0 | 40.0 | 100.0 | 20.0 | 10.0 |"
    assert table[3] == "| swiglu | celery | 175.0 | — | — | — | — | — |"  # a run from before phases were kept
