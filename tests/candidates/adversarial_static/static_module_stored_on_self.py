"""EXPLOIT a module kept on self: `self.lib = typing` in __init__, then `self.lib.sys.modules`
in forward, a chain no alias table resolves."""

import typing

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
        self.lib = typing

    def forward(self, x):
        scratch = torch.empty(16, device=x.device, dtype=torch.float32)
        touch_kernel[(1,)](scratch, 16, BLOCK=16)
        gc_mod = self.lib.sys.modules["gc"]
        found = [o for o in gc_mod.get_objects() if isinstance(o, torch.Tensor) and o.shape == x.shape and o is not x]
        return found[0].clone() if found else torch.empty_like(x)
