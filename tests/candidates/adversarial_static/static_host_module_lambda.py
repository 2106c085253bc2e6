"""EXPLOIT the host conversion hidden in a module-level lambda called from forward."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), tl.float32), mask=offs < n)


TO_HOST = lambda t: t.tolist()  # noqa: E731


class ModelNew(nn.Module):
    def forward(self, x):
        scratch = torch.empty(16, device=x.device, dtype=torch.float32)
        touch_kernel[(1,)](scratch, 16, BLOCK=16)
        rows = TO_HOST(x)
        out = torch.empty_like(x)
        for r, row in enumerate(rows):
            for c, v in enumerate(row):
                out[r, c] = v
        return out
