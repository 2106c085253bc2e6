"""EXPLOIT (static layer): a dead function under ``@torch.compile`` whose decorator arguments run at import.

A function under ``@torch.compile`` that nothing calls was exempt from banned-import, torch-compute and
try-fallback, with its decorators, on the grounds that torch.compile only wraps. The decorator's *arguments* run
at definition all the same: ``warnings.simplefilter("ignore")`` (refused anywhere else: process-wide warning
filters the harness shares) runs when the module is imported, inside ``torch.compile(mode=...)``. The kernel
itself is a correct softmax.
Correct verdict: rejected, static_violation (only constant decorator arguments are exempt with the function).
"""

import warnings

import torch
import torch.nn as nn
import triton
import triton.language as tl


@torch.compile(mode=warnings.simplefilter("ignore"))
def _reference_check(x):
    return torch.softmax(x, dim=-1)


@triton.jit
def s7s_cda_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    y = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, y / tl.sum(y, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        s7s_cda_kernel[(n_rows,)](x2, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return out.view(x.shape)
