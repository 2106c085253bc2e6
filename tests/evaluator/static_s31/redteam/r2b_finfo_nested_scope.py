"""R2: the one counted binding of 'lim' in forward's scope is an assignment to torch.iinfo inside a nested function (ast.walk looks into nested scopes); in forward itself 'lim' is bound by a sequence match pattern to the tensor."""
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0), mask=mask)


def launch_copy(x):
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    copy_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
    return y


class ModelNew(nn.Module):
    def forward(self, x):
        def _limits():
            lim = torch.iinfo(torch.int32)
            return lim

        y = launch_copy(x)
        match (y,):
            case (lim,):
                pass
        return lim.softmax(-1)
