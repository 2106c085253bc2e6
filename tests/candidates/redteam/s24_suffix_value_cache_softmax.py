"""EXPLOIT (result caching keyed by part of the input's values): a cache hit whenever the last 8 values repeat.

As redteam/s9r_prefix_value_cache_softmax, keyed by the input's trailing values instead of its leading ones (the
end of a batch: right-padded sequences, a fixed suffix prompt), so a near-duplicate that changes values only away
from the end still hits the cache and gets the previous call's softmax.
Correct verdict: rejected (incorrect): some near-duplicate must change values the cache does not compare (its head).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

KEY = 8  # trailing values the cache is keyed by


@triton.jit
def s24_svc_softmax(x_ptr, out_ptr, cache_ptr, key_ptr, n_cols, total, KEYN: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    k = total - KEYN + tl.arange(0, KEYN)
    hit = tl.min((tl.load(x_ptr + k) == tl.load(key_ptr + tl.arange(0, KEYN))).to(tl.int32), axis=0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    y = tl.exp(x - tl.max(x, axis=0))
    fresh = y / tl.sum(y, axis=0)
    cached = tl.load(cache_ptr + row * n_cols + cols, mask=mask, other=0.0)
    result = tl.where(hit != 0, cached, fresh)
    tl.store(out_ptr + row * n_cols + cols, result, mask=mask)
    tl.store(cache_ptr + row * n_cols + cols, result, mask=mask)


@triton.jit
def s24_svc_keep_key(x_ptr, key_ptr, total, KEYN: tl.constexpr):
    k = tl.arange(0, KEYN)
    tl.store(key_ptr + k, tl.load(x_ptr + total - KEYN + k))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.caches = {}  # (rows, cols) -> (cached output, key of the call it belongs to)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        n_rows, n_cols = x2.shape
        entry = self.caches.get((n_rows, n_cols))
        if entry is None:
            entry = (torch.empty_like(x2), torch.full((KEY,), float("nan"), dtype=x2.dtype, device=x2.device))
            self.caches[(n_rows, n_cols)] = entry
        cache, key = entry
        out = torch.empty_like(x2)
        s24_svc_softmax[(n_rows,)](x2, out, cache, key, n_cols, x2.numel(), KEYN=KEY,
                                   BLOCK=triton.next_power_of_2(n_cols))
        s24_svc_keep_key[(1,)](x2, key, x2.numel(), KEYN=KEY)
        return out.view(x.shape)
