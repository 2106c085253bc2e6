"""Honest RMSNorm with the setup code real kernel libraries carry: version and device probes, optional
imports with fallback constants, a device module looked up from the tensor's device, a DTensor type
check, a contextmanager helper, and a comparison helper whose parameter is named `operator`."""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import importlib.util
import operator

import torch
import torch.nn as nn
import triton
import triton.language as tl
from packaging import version

try:
    from torch.distributed.tensor import DTensor
except ImportError:  # older torch: no DTensor, nothing to unwrap
    DTensor = None

try:
    _TRITON_VERSION = importlib.metadata.version("triton")
except importlib.metadata.PackageNotFoundError:
    _TRITON_VERSION = "0.0"

HAS_LIBDEVICE = importlib.util.find_spec("triton.language.extra") is not None


def compare_version(current: str, operator, target: str) -> bool:  # noqa: A002 - the libraries' own name
    return operator(version.parse(current), version.parse(target))


def infer_device() -> str:
    if torch.cuda.is_available():
        return "cuda"
    if hasattr(torch, "xpu") and torch.xpu.is_available():
        return "xpu"
    return "cpu"


@functools.cache
def multi_processor_count(device_type: str) -> int:
    module = getattr(torch, device_type, None)
    if module is None or not hasattr(module, "get_device_properties") or not module.is_available():
        return 1
    return module.get_device_properties(0).multi_processor_count


@contextlib.contextmanager
def device_guard(device: torch.device):
    yield device


def calculate_settings(n_cols: int) -> tuple[int, int]:
    block = triton.next_power_of_2(n_cols)
    num_warps = 4 if block < 2048 else 8
    return block, num_warps


@triton.jit
def _rms_norm_fwd(x_ptr, w_ptr, out_ptr, n_cols, x_stride, out_stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    mean_sq = tl.sum(x * x, axis=0) / n_cols
    tl.store(out_ptr + row * out_stride + cols, x * tl.rsqrt(mean_sq + eps) * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))
        try:
            major, _minor = torch.cuda.get_device_capability() if torch.cuda.is_available() else (0, 0)
        except RuntimeError:
            major = 0
        self.sm_major = major
        self.new_triton = compare_version(_TRITON_VERSION, operator.ge, "3.0.0")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if DTensor is not None and isinstance(x, DTensor):
            raise TypeError("ModelNew expects a local tensor, not a DTensor")
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        block, num_warps = calculate_settings(n_cols)
        if multi_processor_count(x.device.type) < 1:
            raise RuntimeError(f"no multiprocessors on {infer_device()}")
        with device_guard(x.device):
            _rms_norm_fwd[(n_rows,)](x2, self.weight, out, n_cols, x2.stride(0), out.stride(0), self.eps,
                                     BLOCK=block, num_warps=num_warps)
        return out.view(x.shape)
