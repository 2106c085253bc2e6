"""R8: the template's hook is overridden by a subclass defined inside a function that only __init__ calls; _subclasses knows module-level classes only, and the nested class's methods are judged as running only where its function is."""
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


class Template(nn.Module):
    def compute(self, x):
        return launch_copy(x)

    def forward(self, x):
        return self.compute(launch_copy(x))


def build():
    class Impl(Template):
        def compute(self, x):
            return torch.softmax(x, dim=-1)

    return Impl()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.rows = build()

    def forward(self, x):
        return self.rows(x)
