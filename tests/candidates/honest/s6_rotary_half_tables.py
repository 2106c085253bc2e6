"""Honest rotary embedding (rotate_half form) for bench/ops/rotary.py as kernel libraries write it: one program
per (batch*seq, head block), the two halves of head_dim loaded separately, cos/sin read once per position from
their first half (the tables are cat(freqs, freqs)), x1*cos - x2*sin and x2*cos + x1*sin in fp32, products
rounded like eager's bf16 multiplies; strides passed, so any layout with a unit last stride works."""

import torch
import triton
import triton.language as tl
from torch import nn

HEADS_PER_PROGRAM = 4


@triton.jit
def _round(v, DTYPE: tl.constexpr):
    return v.to(DTYPE).to(tl.float32)


@triton.jit
def _rope_fwd(x_ptr, cos_ptr, sin_ptr, out_ptr, seq_len, n_heads, stride_xb, stride_xs, stride_xh, stride_cs,
              HALF: tl.constexpr, BLOCK_H: tl.constexpr):
    pid_bs = tl.program_id(0)
    pid_h = tl.program_id(1)
    b = pid_bs // seq_len
    s = pid_bs % seq_len
    heads = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
    d = tl.arange(0, HALF)
    hmask = heads[:, None] < n_heads
    base = b.to(tl.int64) * stride_xb + s.to(tl.int64) * stride_xs + heads[:, None] * stride_xh
    dtype = x_ptr.dtype.element_ty
    x1 = tl.load(x_ptr + base + d[None, :], mask=hmask, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptr + base + HALF + d[None, :], mask=hmask, other=0.0).to(tl.float32)
    cos = tl.load(cos_ptr + s * stride_cs + d).to(tl.float32)[None, :]
    sin = tl.load(sin_ptr + s * stride_cs + d).to(tl.float32)[None, :]
    o1 = _round(x1 * cos, dtype) + _round(-x2 * sin, dtype)
    o2 = _round(x2 * cos, dtype) + _round(x1 * sin, dtype)
    tl.store(out_ptr + base + d[None, :], o1.to(dtype), mask=hmask)
    tl.store(out_ptr + base + HALF + d[None, :], o2.to(dtype), mask=hmask)


def _grid(batch: int, seq: int, heads: int) -> tuple[int, int]:
    return batch * seq, triton.cdiv(heads, HEADS_PER_PROGRAM)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        batch, seq, heads, head_dim = x.shape
        assert head_dim % 2 == 0, f"rotary: head_dim must be even, got {head_dim}"
        assert cos.shape == (seq, head_dim) and sin.shape == cos.shape, "rotary: cos/sin must be [seq, head_dim]"
        if x.stride(-1) != 1:
            x = x.contiguous()
        cos = cos.contiguous()
        sin = sin.contiguous()
        out = torch.empty_like(x)
        _rope_fwd[_grid(batch, seq, heads)](x, cos, sin, out, seq, heads, x.stride(0), x.stride(1), x.stride(2),
                                            cos.stride(0), HALF=head_dim // 2, BLOCK_H=HEADS_PER_PROGRAM)
        return out
