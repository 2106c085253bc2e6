"""Honest masked attention softmax for bench/ops/masked_softmax.py: the mask broadcast with expand_as (stride 0
over batch and heads, no copy) and its strides passed to the kernel, an IntEnum naming the mask convention passed
as a tl.constexpr, the launch bound with functools.partial(kernel[grid], ...), typing.Literal for
the mode, fp32 math."""

import enum
import functools
from typing import Literal

import torch
import triton
import triton.language as tl
from torch import nn


class MaskKind(enum.IntEnum):
    TRUE_MEANS_MASKED = 0
    TRUE_MEANS_KEEP = 1


@triton.jit
def _masked_softmax(S, M, OUT, n_cols, s_b, s_h, s_r, m_b, m_h, m_r, n_heads, n_q, BLOCK: tl.constexpr,
                    KIND: tl.constexpr):
    pid = tl.program_id(0)
    r = pid % n_q
    bh = pid // n_q
    h = bh % n_heads
    b = bh // n_heads
    cols = tl.arange(0, BLOCK)
    inside = cols < n_cols
    s_row = S + b.to(tl.int64) * s_b + h.to(tl.int64) * s_h + r.to(tl.int64) * s_r
    m_row = M + b.to(tl.int64) * m_b + h.to(tl.int64) * m_h + r.to(tl.int64) * m_r
    x = tl.load(s_row + cols, mask=inside, other=-float("inf")).to(tl.float32)
    flag = tl.load(m_row + cols, mask=inside, other=0) != 0
    drop = flag if KIND == 0 else (flag == 0)
    x = tl.where(drop, -float("inf"), x)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    o_row = OUT + pid.to(tl.int64) * n_cols
    tl.store(o_row + cols, (e / tl.sum(e, axis=0)).to(OUT.dtype.element_ty), mask=inside)


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor,
                   convention: Literal["masked", "keep"] = "masked") -> torch.Tensor:
    kind = MaskKind.TRUE_MEANS_MASKED if convention == "masked" else MaskKind.TRUE_MEANS_KEEP
    if scores.dim() != 4:
        raise ValueError(f"masked_softmax: scores must be [batch, heads, q, k], got {tuple(scores.shape)}")
    if scores.stride(-1) != 1:
        scores = scores.contiguous()
    mask = mask.expand_as(scores)
    if mask.stride(-1) != 1:
        mask = mask.contiguous()
    batch, heads, n_q, n_k = scores.shape
    out = torch.empty((batch, heads, n_q, n_k), device=scores.device, dtype=scores.dtype)
    launch = functools.partial(_masked_softmax[(batch * heads * n_q,)], BLOCK=triton.next_power_of_2(n_k),
                               KIND=int(kind))
    launch(scores, mask, out, n_k, scores.stride(0), scores.stride(1), scores.stride(2), mask.stride(0),
           mask.stride(1), mask.stride(2), heads, n_q)
    return out


class ModelNew(nn.Module):
    def forward(self, scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return masked_softmax(scores, mask)
