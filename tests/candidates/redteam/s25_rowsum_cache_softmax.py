"""EXPLOIT (result caching keyed by a statistic of the input): each row's softmax cached by the row's sum and sum of
squares.

Each program compares its row's sum and sum of squares with those of the same row in the previous call of this
shape; where both are equal it returns that call's row. The key reads every value, so every near-duplicate kind
(head, tail, a far point, halves, a block: evaluator/sandboxed/near.py) changes the key of each row it touches and
only untouched rows, whose answers are the same, are served from the cache; the verifier's input sets are finite
random draws whose row sums never repeat. But the key is lossy: every row holding a -inf (an attention mask, a
causal mask's upper triangle) has sum -inf and sum of squares +inf, so the second batch of masked attention scores
gets the first batch's probabilities in every masked row (and any two rows that are permutations of each other
collide too).
Correct verdict: rejected (incorrect): an input set with masked (-inf) logits, called after another, shows it.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s25_rsc_softmax(x_ptr, out_ptr, cache_ptr, key_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    s1 = tl.sum(x, axis=0)
    s2 = tl.sum(x * x, axis=0)
    hit = (s1 == tl.load(key_ptr + 2 * row)) & (s2 == tl.load(key_ptr + 2 * row + 1))
    xm = tl.where(mask, x, -float("inf"))
    y = tl.exp(xm - tl.max(xm, axis=0))
    fresh = y / tl.sum(y, axis=0)
    cached = tl.load(cache_ptr + row * n_cols + cols, mask=mask, other=0.0)
    result = tl.where(hit, cached, fresh)
    tl.store(out_ptr + row * n_cols + cols, result, mask=mask)
    tl.store(cache_ptr + row * n_cols + cols, result, mask=mask)
    tl.store(key_ptr + 2 * row, s1)
    tl.store(key_ptr + 2 * row + 1, s2)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.caches = {}  # (rows, cols) -> (answers of the last call, its rows' keys)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        n_rows, n_cols = x2.shape
        entry = self.caches.get((n_rows, n_cols))
        if entry is None:
            entry = (torch.empty_like(x2), torch.full((2 * n_rows,), float("nan"), dtype=x2.dtype, device=x2.device))
            self.caches[(n_rows, n_cols)] = entry
        cache, key = entry
        out = torch.empty_like(x2)
        s25_rsc_softmax[(n_rows,)](x2, out, cache, key, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return out.view(x.shape)
