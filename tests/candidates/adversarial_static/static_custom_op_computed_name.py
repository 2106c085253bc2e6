"""EXPLOIT a custom op whose name is assembled at run time ("at" + "en::..."), so the checker
cannot tell that it registers into PyTorch's own aten namespace."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), tl.float32), mask=offs < n)


_NAME = "at" + "en::kelib_softmax"


@torch.library.custom_op(_NAME, mutates_args=())
def normalise(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    return out


class ModelNew(nn.Module):
    def forward(self, x):
        scratch = torch.empty(16, device=x.device, dtype=torch.float32)
        touch_kernel[(1,)](scratch, 16, BLOCK=16)
        return normalise(x)
