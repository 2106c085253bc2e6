"""R2: 't' is bound once by assignment to torch.finfo(...); a match capture pattern (not a Name node, so not counted) rebinds it to the tensor; t.softmax(...) is then exempt as a dtype-limits method."""
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


def _rows(x):
    t = torch.finfo(x.dtype)
    match x:
        case t:
            pass
    return t.softmax(dim=-1)


class ModelNew(nn.Module):
    def forward(self, x):
        return _rows(launch_copy(x))
