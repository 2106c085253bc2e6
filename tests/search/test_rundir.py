"""Run directories: searches started at the same moment never share one, and a run is never overwritten."""

import multiprocessing
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import pytest

from kernelevo.search.rundir import RunDir, reserve_run_dir

NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def test_reserving_twice_in_the_same_second_gives_two_directories(tmp_path):
    first = reserve_run_dir(tmp_path / "runs", "layer_norm", NOW)
    second = reserve_run_dir(tmp_path / "runs", "layer_norm", NOW)
    assert first.name == "20250102-030405-layer_norm" and second.name == "20250102-030405-layer_norm-2"
    assert first.is_dir() and second.is_dir() and not any(first.iterdir())


def test_op_ids_are_made_safe_for_a_directory_name(tmp_path):
    assert reserve_run_dir(tmp_path, "ops/a b.py::Norm", NOW).name == "20250102-030405-ops_a_b.py_Norm"


def test_concurrent_reservations_from_threads_are_all_distinct(tmp_path):
    workers = 16
    start = threading.Barrier(workers)

    def reserve(_: int) -> Path:
        start.wait()
        return reserve_run_dir(tmp_path / "runs", "layer_norm", NOW)

    with ThreadPoolExecutor(workers) as pool:
        paths = list(pool.map(reserve, range(workers)))
    assert len(set(paths)) == workers and all(p.is_dir() for p in paths)


def _reserve_in_process(parent: str) -> str:
    return str(reserve_run_dir(Path(parent), "layer_norm", NOW))


def test_concurrent_reservations_from_processes_are_all_distinct(tmp_path):
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        paths = pool.map(_reserve_in_process, [str(tmp_path / "runs")] * 8)
    assert len(set(paths)) == 8


def test_create_accepts_a_reserved_empty_directory(tmp_path):
    run = RunDir(reserve_run_dir(tmp_path, "layer_norm", NOW))
    run.create({"op_id": "layer_norm"})
    assert run.read_meta() == {"op_id": "layer_norm"}


def test_create_refuses_a_directory_that_holds_a_run(tmp_path):
    RunDir(tmp_path / "run").create({"op_id": "first"})
    with pytest.raises(FileExistsError, match=r"already holds a run; resume it with --resume"):
        RunDir(tmp_path / "run").create({"op_id": "second"})
    assert RunDir(tmp_path / "run").read_meta() == {"op_id": "first"}


def test_concurrent_creates_in_one_directory_start_exactly_one_run(tmp_path):
    workers = 8
    start = threading.Barrier(workers)

    def create(index: int) -> bool:
        start.wait()
        try:
            RunDir(tmp_path / "run").create({"op_id": f"run-{index}"})
        except FileExistsError:
            return False
        return True

    with ThreadPoolExecutor(workers) as pool:
        won = list(pool.map(create, range(workers)))
    assert won.count(True) == 1
    assert RunDir(tmp_path / "run").read_meta() == {"op_id": f"run-{won.index(True)}"}


def test_an_empty_run_json_gets_an_actionable_error(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").write_text("")
    with pytest.raises(ValueError, match="delete .* and start a new run"):
        RunDir(tmp_path / "run").read_meta()
