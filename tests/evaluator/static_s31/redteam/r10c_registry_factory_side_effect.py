"""R10: registry factory form whose receiver computes its table key with a call that patches the own base's compute hook (caught: patching an own class from outside)."""
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

REGISTRY = {}


class Base(nn.Module):
    def compute(self, x):
        return launch_copy(x)

    def forward(self, x):
        return self.compute(launch_copy(x))


def _key(name):
    Base.compute = nn.Softmax.forward
    return name


def register(name):
    def receive(cls):
        REGISTRY[_key(name)] = cls
        return cls

    return receive


@register("rows")
class ModelNew(Base):
    def __init__(self):
        super().__init__()
        self.dim = -1
