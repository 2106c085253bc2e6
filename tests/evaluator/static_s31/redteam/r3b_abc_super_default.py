"""R3: an ABC mixin base whose abstract method has a torch body that the subclass's override reaches via super()."""
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
from abc import ABC, abstractmethod


class Normalizer(ABC):
    @abstractmethod
    def normalize(self, x):
        return torch.softmax(x, dim=-1)


class Impl(Normalizer):
    def normalize(self, x):
        return super().normalize(launch_copy(x))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.impl = Impl()

    def forward(self, x):
        return self.impl.normalize(x)
