"""EXPLOIT memory exhaustion: allocate and touch host memory in a loop inside forward.

torch.zeros writes every page, so resident memory really grows (torch.empty would not). The loop
stops at 8 GiB and then computes the right answer, so that a verifier without a memory cap fails this
test (it accepts) rather than taking the CI machine down.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha
        self.hoard = []

    def forward(self, x, y):
        while len(self.hoard) < 32:  # 32 x 256 MiB = 8 GiB
            self.hoard.append(torch.zeros(64 << 20, dtype=torch.float32, device="cpu"))
        out = torch.empty_like(x)
        axpy_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, self.alpha, x.numel(), BLOCK=1024)
        return out
