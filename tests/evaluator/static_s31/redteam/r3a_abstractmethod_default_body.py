"""R3: an @abstractmethod with a default body (no ABCMeta on nn.Module, so nothing enforces it) is called through self; does the checker follow the decorated method?"""
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
from abc import abstractmethod


class Base(nn.Module):
    @abstractmethod
    def normalize(self, x):
        return torch.softmax(x, dim=-1)

    def forward(self, x):
        return self.normalize(launch_copy(x))


class ModelNew(Base):
    pass
