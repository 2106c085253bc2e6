"""Cross entropy that assumes every target is a valid class: ignore_index (-100, PyTorch's default, how
LLM training pads labels) is neither skipped nor excluded from the mean; the target logit is read at column -100."""

import enum

import torch
import triton
import triton.language as tl
from torch import nn


class Reduction(enum.Enum):
    NONE = "none"
    SUM = "sum"
    MEAN = "mean"


DEFAULT_BLOCK = 2048


@triton.jit
def _row_loss_kernel(logits_ptr, target_ptr, loss_ptr, stride_row, n_cols, BLOCK: tl.constexpr = 1024):
    row = tl.program_id(0).to(tl.int64)
    base = logits_ptr + row * stride_row
    target = tl.load(target_ptr + row)
    m = -float("inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        new_m = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - new_m) + tl.sum(tl.exp(x - new_m), axis=0)
        m = new_m
    target_logit = tl.load(base + target).to(tl.float32)
    tl.store(loss_ptr + row, tl.log(s) + m - target_logit)


@triton.jit
def _reduce_kernel(loss_ptr, out_ptr, n_rows, scale, BLOCK: tl.constexpr = 1024):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_rows, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(loss_ptr + offs, mask=offs < n_rows, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) * scale)


def cross_entropy(logits: torch.Tensor, target: torch.Tensor, reduction: Reduction = Reduction.MEAN):
    if logits.dim() != 2:
        raise ValueError(f"cross_entropy: logits must be [tokens, vocab], got shape {tuple(logits.shape)}")
    if target.shape != logits.shape[:1]:
        raise ValueError(f"cross_entropy: target must be [tokens] = {logits.shape[0]}, got {tuple(target.shape)}")
    logits = logits.contiguous()
    target = target.contiguous()
    n_rows, n_cols = logits.shape
    losses = torch.empty(n_rows, device=logits.device, dtype=torch.float32)
    _row_loss_kernel[(n_rows,)](logits, target, losses, logits.stride(0), n_cols,
                                BLOCK=min(DEFAULT_BLOCK, triton.next_power_of_2(n_cols)))
    if reduction is Reduction.NONE:
        return losses
    out = torch.empty((), device=logits.device, dtype=torch.float32)
    scale = 1.0 / n_rows if reduction is Reduction.MEAN else 1.0
    _reduce_kernel[(1,)](losses, out, n_rows, scale)
    return out


class ModelNew(nn.Module):
    def __init__(self, reduction: str = "mean"):
        super().__init__()
        self.reduction = Reduction(reduction)

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return cross_entropy(logits, target, self.reduction)
