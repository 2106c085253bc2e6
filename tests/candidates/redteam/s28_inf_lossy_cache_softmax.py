"""Row softmax with a whole-input cache keyed by every row's position-weighted sum and sum of squares (red team
s28): a swap leaves some rows' keys but not all, every other kind changes some row, and the key is lossy only on
infinities: two batches whose rows hold -inf at the same places (a padded attention mask) collide."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gmc_keys(x_ptr, key_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    w = (cols + 1).to(tl.float32)
    tl.store(key_ptr + 2 * row, tl.sum(x * w, axis=0))
    tl.store(key_ptr + 2 * row + 1, tl.sum(x * x * w * w, axis=0))


@triton.jit
def gmc_softmax(x_ptr, out_ptr, cache_ptr, old_ptr, new_ptr, n_rows, n_cols, BLOCK: tl.constexpr,
                KBLOCK: tl.constexpr):
    row = tl.program_id(0)
    k = tl.arange(0, KBLOCK)
    kmask = k < 2 * n_rows
    same = tl.load(old_ptr + k, mask=kmask, other=0.0) == tl.load(new_ptr + k, mask=kmask, other=0.0)
    hit = tl.min(same.to(tl.int32), axis=0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    y = tl.exp(x - tl.max(x, axis=0))
    fresh = y / tl.sum(y, axis=0)
    cached = tl.load(cache_ptr + row * n_cols + cols, mask=mask, other=0.0)
    result = tl.where(hit != 0, cached, fresh)
    tl.store(out_ptr + row * n_cols + cols, result, mask=mask)
    tl.store(cache_ptr + row * n_cols + cols, result, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.caches = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        n_rows, n_cols = x2.shape
        entry = self.caches.get((n_rows, n_cols))
        if entry is None:
            entry = (torch.empty_like(x2), torch.full((2 * n_rows,), float("nan"), dtype=x2.dtype, device=x2.device))
        cache, old = entry
        new = torch.empty((2 * n_rows,), dtype=x2.dtype, device=x2.device)
        block = triton.next_power_of_2(n_cols)
        gmc_keys[(n_rows,)](x2, new, n_cols, BLOCK=block)
        out = torch.empty_like(x2)
        gmc_softmax[(n_rows,)](x2, out, cache, old, new, n_rows, n_cols, BLOCK=block,
                               KBLOCK=triton.next_power_of_2(2 * n_rows))
        self.caches[(n_rows, n_cols)] = (cache, new)
        return out.view(x.shape)
