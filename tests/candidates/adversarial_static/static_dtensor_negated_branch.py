"""EXPLOIT the "DTensor branch never runs" rule: the import of gc stands under `if not isinstance(x, DTensor)`,
which is the branch plain tensors take. Only the branch a DTensor would take is lifted, so the import is refused."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch.distributed.tensor import DTensor


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        scratch = torch.empty(16, device=x.device, dtype=torch.float32)
        touch_kernel[(1,)](scratch, 16, BLOCK=16)
        if not isinstance(x, DTensor):
            import gc

            for obj in gc.get_objects():
                if isinstance(obj, torch.Tensor) and obj.shape == x.shape and obj is not x:
                    return obj.clone()
        return torch.empty_like(x)
