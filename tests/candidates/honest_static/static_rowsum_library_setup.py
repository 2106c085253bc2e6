"""Honest scaled row sum with the setup and bookkeeping Liger-Kernel's launchers carry: an optional import of a
package that is not installed, importlib.import_module as a version probe with literal callers, a version shim
nobody calls, read-only environment and interpreter flags, an autograd Function with amp decorators whose
backward has a DTensor path, a DTensor branch in forward, an optional `weight` no caller passes, and bookkeeping
on the kernel's own output (a total, a mask count, an assert) small enough for the run time's allowance."""

from __future__ import annotations

import functools
import importlib
import operator
import os
import sys
import warnings

import torch
import torch.nn as nn
import triton
import triton.language as tl
from packaging.version import Version
from torch.distributed.tensor import DTensor

try:
    import kernelevo_corpus_missing_extra  # noqa: F401 - not installed: the fallback always runs

    HAS_EXTRA = True
except ImportError:
    HAS_EXTRA = False

DEBUG = os.environ.get("ROWSUM_DEBUG", "0") == "1"
OLD_PYTHON = sys.version_info < (3, 9)


def compare_version(package, op, target):
    try:
        pkg = importlib.import_module(package)
    except ImportError:
        return False
    return op(Version(pkg.__version__), Version(target))


def transformers_version_dispatch(before, after):
    """A version shim of the library that nothing here calls."""
    from transformers import __version__ as transformers_version

    return before if Version(transformers_version) < Version("4.48.0") else after


NEW_TRITON = compare_version("triton", operator.ge, "3.0.0") or compare_version("pytorch-triton-xpu", operator.ge,
                                                                                "3.6.0")


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, stride, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0) * scale)


def ensure_contiguous(fn):
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        return fn(ctx, *[a.contiguous() if isinstance(a, torch.Tensor) else a for a in args])

    return wrapper


def row_sum_forward(x, scale, weight):
    n_rows, n_cols = x.shape
    if weight is not None:
        weight_sum = weight.sum().item()  # every caller passes weight=None: never runs here
        scale = scale / weight_sum
    out = torch.empty(n_rows, dtype=x.dtype, device=x.device)
    row_sum_kernel[(n_rows,)](x, out, n_cols, x.stride(0), scale, BLOCK=min(1024, triton.next_power_of_2(n_cols)))
    total = torch.sum(out)  # the kernel's own output, reduced: bookkeeping (small, and reported at run time)
    finite = total == total
    n_finite = finite.sum().item()
    assert (total != total).sum() <= 1, f"row sums {out.max()} out of range"
    if DEBUG or not n_finite:
        warnings.warn(f"row sums: total {total.item()}", stacklevel=2)
    return out


class RowSumFunction(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda")
    @ensure_contiguous
    def forward(ctx, x, scale):
        if isinstance(x, DTensor):
            local = row_sum_forward(x.to_local(), scale, None)
            return DTensor.from_local(local, x.device_mesh, x.placements)
        return row_sum_forward(x, scale, None)

    @staticmethod
    @torch.amp.custom_bwd(device_type="cuda")
    def backward(ctx, grad):
        mesh = getattr(ctx, "device_mesh", None)
        if mesh is not None:
            grad = torch.distributed.tensor.distribute_tensor(grad, device_mesh=mesh)
        return grad.unsqueeze(-1), None


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1])
        return RowSumFunction.apply(x2, self.scale).view(x.shape[:-1])
