"""R10: registry factory form @register('rows') (accepted: it only files the class); a module-level loop over the registry's values then replaces each registered class's forward with torch's nn.Softmax.forward."""
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


def register(name):
    def receive(cls):
        REGISTRY[name] = cls
        return cls

    return receive


@register("rows")
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.dim = -1

    def forward(self, x):
        return launch_copy(x)


for registered in REGISTRY.values():
    registered.forward = nn.Softmax.forward
