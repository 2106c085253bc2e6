"""Shared test configuration: GPU tests skip cleanly on machines without CUDA."""

from __future__ import annotations

import functools

import pytest


@functools.lru_cache(maxsize=1)
def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    if _has_cuda():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU (run on the device machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


@pytest.fixture
def glob_steps(monkeypatch):
    """Counts the config-glob matcher's steps (one closure of its live positions per path character and glob, each
    bounded by the glob's length): a measure of its work that no machine's load changes. A list of one int."""
    from kernelevo.globs import Glob

    steps = [0]
    original = Glob._closure

    def counted(self, states: int) -> int:
        steps[0] += 1
        return original(self, states)

    monkeypatch.setattr(Glob, "_closure", counted)
    return steps
