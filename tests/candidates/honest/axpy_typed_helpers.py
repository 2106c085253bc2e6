"""Honest axpy written with typing helpers (TypeVar, NamedTuple, cast) and a dataclass.

`typing.TypeVar` and `typing.NamedTuple` ask for their caller's frame to learn its module name; the verifier
must let typing do that for a candidate without handing the candidate a frame. namedtuple and dataclasses
compile their generated methods from templates of their own: that is not the candidate evaluating a string.
"""

from dataclasses import dataclass
from typing import NamedTuple, TypeVar, cast

import torch
import torch.nn as nn
import triton
import triton.language as tl

T = TypeVar("T", bound=torch.Tensor)


class LaunchShape(NamedTuple):
    n: int
    block: int


@dataclass(frozen=True)
class Tuning:
    block: int = 1024


@triton.jit
def _axpy_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


def axpy(alpha: float, x: T, y: T) -> T:
    x = cast(T, x.contiguous())
    y = cast(T, y.contiguous())
    out = torch.empty_like(x)
    shape = LaunchShape(n=x.numel(), block=Tuning().block)
    _axpy_kernel[(triton.cdiv(shape.n, shape.block),)](x, y, out, alpha, shape.n, BLOCK=shape.block)
    return cast(T, out)


class ModelNew(nn.Module):
    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return axpy(self.alpha, x, y)
