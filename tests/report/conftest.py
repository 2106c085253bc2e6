"""Fixtures of the report tests: run directories written as the search writes them (report_data.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "fakes"))  # the fake GitHub server

from report_data import write_run  # noqa: E402


@pytest.fixture
def gpu_run(tmp_path: Path) -> Path:
    return write_run(tmp_path / "run")


@pytest.fixture
def failed_run(tmp_path: Path) -> Path:
    return write_run(tmp_path / "failed", accepted=False)
