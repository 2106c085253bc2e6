"""EXPLOIT library call in a closure made in __init__ (not on the forward path) and stored on self;
forward only calls `self.norm(x)`, which a reachability walk from forward cannot follow."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        def norm(t):
            return t.softmax(-1)

        self.norm = norm

    def forward(self, x):
        scratch = torch.empty(16, device=x.device, dtype=torch.float32)
        touch_kernel[(1,)](scratch, 16, BLOCK=16)
        return self.norm(x)
