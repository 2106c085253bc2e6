"""EXPLOIT (result caching keyed by one input of several): axpy's answer cached by the whole of x, never y.

Every call compares x with the x of the previous call of its size, in full (one kernel, a flag raised with an
integer atomic max where any value differs); where all of x is the same, the previous call's answer is returned,
whatever y is. A user's program that keeps x and changes y (``y = alpha * x + y`` in a loop, an accumulator, a
residual stream added to one fixed bias) gets the first answer again and again.
The verifier never holds one floating input fixed while another changes: every input set of the plan draws all
inputs afresh, and each near-duplicate kind (evaluator/sandboxed/near.py ``near_duplicate_patches``) patches every
floating input of the set at once (head, tail, point, halves, block of x and of y), so x always differs and the
cache always misses; repeated calls of one set return the same bits either way.
Correct verdict: rejected (incorrect): a near-duplicate that changes y alone, keeping x bitwise, gets the stale sum.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s25_xoc_key_miss(x_ptr, key_ptr, miss_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    k = tl.load(key_ptr + offs, mask=mask, other=0.0)
    differs = tl.max(((x != k) & mask).to(tl.int32), axis=0)
    tl.atomic_max(miss_ptr, differs)


@triton.jit
def s25_xoc_axpy(x_ptr, y_ptr, out_ptr, key_ptr, cache_ptr, miss_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    miss = tl.load(miss_ptr)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    cached = tl.load(cache_ptr + offs, mask=mask, other=0.0)
    result = tl.where(miss != 0, alpha * x + y, cached)
    tl.store(out_ptr + offs, result, mask=mask)
    tl.store(cache_ptr + offs, result, mask=mask)
    tl.store(key_ptr + offs, x, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha
        self.caches = {}  # numel -> (x of the last call, its answer)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = y.contiguous()
        n = x.numel()
        entry = self.caches.get(n)
        if entry is None:
            entry = (torch.full((n,), float("nan"), dtype=x.dtype, device=x.device), torch.empty_like(x))
            self.caches[n] = entry
        key, cache = entry
        miss = torch.zeros(1, dtype=torch.int32, device=x.device)
        out = torch.empty_like(x)
        block = 1024
        grid = (triton.cdiv(n, block),)
        s25_xoc_key_miss[grid](x, key, miss, n, BLOCK=block)
        s25_xoc_axpy[grid](x, y, out, key, cache, miss, self.alpha, n, BLOCK=block)
        return out
