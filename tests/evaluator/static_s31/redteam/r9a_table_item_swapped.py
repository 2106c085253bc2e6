"""R9 (+R7): a dict literal of kernels counts as a launch table, but its entry is replaced at module level by a defaultdict(Runner): KERNELS['rows'][grid](...) runs Runner.__call__, which never launches; the softmax runs in an unnamed keys() (R7)."""
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0), mask=mask)


class _Rows:
    def __init__(self, x, out):
        self.x = x
        self.out = out

    def keys(self):
        self.out.copy_(torch.softmax(self.x, dim=-1))
        return []


class Runner:
    def __call__(self, x, y, n, BLOCK=1024):
        return dict(**_Rows(x, y))
import collections

KERNELS = {"rows": copy_kernel}
KERNELS["rows"] = collections.defaultdict(Runner)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        KERNELS["rows"][(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
