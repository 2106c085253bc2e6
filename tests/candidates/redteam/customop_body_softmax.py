"""EXPLOIT (runtime layer): torch.softmax inside the body of the candidate's own torch.library custom op.

The op recorder is a TorchDispatchMode. When it sees the candidate's own op (``redteam::smx``, allowed as
"launching its kernels") it runs it inside ``__torch_dispatch__``, where PyTorch has popped the mode: every
aten op the op's body runs is invisible. The body calls ``torch.softmax`` for the math and launches a decoy
kernel so that some interpreter program runs. The static checker refuses the torch call; with static checks
off, the runtime layer alone must still say cheat_suspected.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


@torch.library.custom_op("redteam::smx", mutates_args=())
def smx(x: torch.Tensor) -> torch.Tensor:
    y = torch.softmax(x, dim=-1)
    out = torch.empty_like(y)
    n = y.numel()
    copy_kernel[(triton.cdiv(n, 1024),)](y, out, n, BLOCK=1024)
    return out


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.ops.redteam.smx(x)
