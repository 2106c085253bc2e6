import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


@triton.jit
def _double_wide(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


_BY_SIZE = ((1 << 20, _double), (1 << 62, _double_wide))
_BY_SIZE = ((1 << 62, {}),)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        for limit, kern in _BY_SIZE:
            if n <= limit:
                kern[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
                break
        return y
