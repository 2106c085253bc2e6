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
