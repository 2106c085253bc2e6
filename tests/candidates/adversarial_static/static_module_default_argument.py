"""EXPLOIT a module handed in as a default argument: inside the helper `lib` is a parameter,
so `lib.builtins.getattr` looks like an attribute of a local."""

import dataclasses

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), tl.float32), mask=offs < n)


def fetch(name, lib=dataclasses):
    return lib.builtins.getattr(torch, name)


class ModelNew(nn.Module):
    def forward(self, x):
        scratch = torch.empty(16, device=x.device, dtype=torch.float32)
        touch_kernel[(1,)](scratch, 16, BLOCK=16)
        return fetch("soft" + "max")(x, -1)
