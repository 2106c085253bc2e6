"""R8: template method whose implementation comes from a sibling mixin (class Rows(Template, SoftmaxImpl)): self.compute inside Template resolves to Template's bases and subclasses (Rows.compute is not defined), never to the mixin's compute."""
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
    def forward(self, x):
        return self.compute(launch_copy(x))


class SoftmaxImpl:
    def compute(self, x):
        return torch.softmax(x, dim=-1)


class Rows(Template, SoftmaxImpl):
    pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.rows = Rows()

    def forward(self, x):
        return self.rows(x)
