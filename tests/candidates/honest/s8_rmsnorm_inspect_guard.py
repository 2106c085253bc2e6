"""Honest RMSNorm with the input-guard decorator kernel libraries write: ``inspect.signature`` maps positional
arguments to parameter names (contiguity is skipped for the names listed), ``inspect.unwrap`` keys a table of
launchers, and a feature probe asks whether ``triton.autotune`` takes ``cache_results``. All of it reads names or
keys only (evaluator/static_inspect.py); the math is one Triton kernel."""

import functools
import inspect

import torch
import torch.nn as nn
import triton
import triton.language as tl

AUTOTUNE_CACHES = "cache_results" in inspect.signature(triton.autotune).parameters
LAUNCHERS: dict = {}


def input_guard(skip=()):
    def decorator(fn):
        sig = inspect.signature(fn)
        names = list(sig.parameters.keys())

        @functools.wraps(fn)
        def wrapper(*args):
            fixed = []
            for i, arg in enumerate(args):
                name = names[i] if i < len(names) else f"arg{i}"
                if isinstance(arg, torch.Tensor) and name not in skip:
                    arg = arg.contiguous()
                fixed.append(arg)
            return fn(*fixed)
        LAUNCHERS[inspect.unwrap(wrapper)] = len(names)
        return wrapper
    return decorator


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n_cols, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    inv_rms = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(out_ptr + row * stride + cols, x * inv_rms * w, mask=mask)


@input_guard(skip=("eps",))
def rms_norm(x, weight, eps):
    x2 = x.reshape(-1, x.shape[-1])
    out = torch.empty_like(x2)
    rmsnorm_kernel[(x2.shape[0],)](x2, weight, out, x2.shape[1], x2.stride(0), eps,
                                   BLOCK=triton.next_power_of_2(x2.shape[1]))
    return out.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.weight, self.eps)
