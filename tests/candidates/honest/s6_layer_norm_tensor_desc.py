"""Honest LayerNorm for bench/ops/layer_norm.py with device-side tensor descriptors (the API that replaced
block pointers): tl.make_tensor_descriptor over the [rows, cols] input, output, weight and bias, desc.load /
desc.store of one row tile (out-of-range columns read as zero and are not written), fp32 statistics, a module
logger, torch.no_grad on forward, triton.set_allocator for the descriptors' scratch."""

import logging

import torch
import triton
import triton.language as tl
from torch import nn

logger = logging.getLogger(__name__)


def _descriptor_scratch(size: int, alignment: int, stream: int | None) -> torch.Tensor:
    return torch.empty(size, dtype=torch.int8, device="cuda" if torch.cuda.is_available() else "cpu")


@triton.jit
def _layer_norm_fwd(X, Y, W, B, n_rows, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_desc = tl.make_tensor_descriptor(X, shape=[n_rows, n_cols], strides=[n_cols, 1], block_shape=[1, BLOCK])
    y_desc = tl.make_tensor_descriptor(Y, shape=[n_rows, n_cols], strides=[n_cols, 1], block_shape=[1, BLOCK])
    w_desc = tl.make_tensor_descriptor(W, shape=[1, n_cols], strides=[n_cols, 1], block_shape=[1, BLOCK])
    b_desc = tl.make_tensor_descriptor(B, shape=[1, n_cols], strides=[n_cols, 1], block_shape=[1, BLOCK])
    x = x_desc.load([row, 0]).to(tl.float32)
    cols = tl.arange(0, BLOCK)[None, :]
    mean = tl.sum(x, axis=1) / n_cols
    diff = tl.where(cols < n_cols, x - mean[:, None], 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(diff * diff, axis=1) / n_cols + eps)
    w = w_desc.load([0, 0]).to(tl.float32)
    b = b_desc.load([0, 0]).to(tl.float32)
    y = diff * rstd[:, None] * w + b
    y_desc.store([row, 0], y.to(Y.dtype.element_ty))


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    shape = x.shape
    x2d = x.reshape(-1, shape[-1]).contiguous()
    y = torch.empty_like(x2d)
    n_rows, n_cols = x2d.shape
    block = triton.next_power_of_2(n_cols)
    logger.debug("layer_norm: %d rows x %d cols, block %d", n_rows, n_cols, block)
    _layer_norm_fwd[(n_rows,)](x2d, y, weight, bias, n_rows, n_cols, eps, BLOCK=block, num_warps=8)
    return y.view(shape)


class ModelNew(nn.Module):
    def __init__(self, hidden: int = 4096, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden, dtype=torch.bfloat16))
        self.bias = nn.Parameter(torch.zeros(hidden, dtype=torch.bfloat16))
        self.eps = eps
        triton.set_allocator(_descriptor_scratch)

    @torch.no_grad()
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return layer_norm(x, self.weight, self.bias, self.eps)
