"""Honest temperature softmax for bench/ops/softmax_temperature.py: an nn.Module that keeps 1/T in a
registered (non-persistent) buffer the kernel reads through a pointer, torch.inference_mode on forward, a
looped online softmax (max and rescaled sum in one pass, normalise in a second) for 128k-wide rows."""

import torch
import triton
import triton.language as tl
from torch import nn

BLOCK_N = 4096


@triton.jit
def _softmax_temperature(logits_ptr, probs_ptr, inv_t_ptr, n_cols, stride_in, stride_out, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    inv_t = tl.load(inv_t_ptr)
    in_row = logits_ptr + row * stride_in
    out_row = probs_ptr + row * stride_out
    m_i = tl.full((BLOCK,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        z = tl.load(in_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32) * inv_t
        m_new = tl.maximum(m_i, z)
        alpha = tl.where(m_new == -float("inf"), 0.0, tl.exp(m_i - m_new))
        l_i = l_i * alpha + tl.where(m_new == -float("inf"), 0.0, tl.exp(z - m_new))
        m_i = m_new
    m = tl.max(m_i, axis=0)
    denom = tl.sum(l_i * tl.exp(m_i - m), axis=0)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        z = tl.load(in_row + cols, mask=mask, other=-float("inf")).to(tl.float32) * inv_t
        tl.store(out_row + cols, tl.exp(z - m) / denom, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, temperature: float = 0.7):
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        self.temperature = temperature
        self.register_buffer("inv_temperature", torch.tensor([1.0 / temperature], dtype=torch.float32),
                             persistent=False)

    @torch.inference_mode()
    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        logits = logits.contiguous()
        rows, vocab = logits.shape
        probs = torch.empty((rows, vocab), device=logits.device, dtype=torch.float32)
        inv_t = self.inv_temperature.to(logits.device)
        block = min(BLOCK_N, triton.next_power_of_2(vocab))
        _softmax_temperature[(rows,)](logits, probs, inv_t, vocab, logits.stride(0), probs.stride(0), BLOCK=block)
        return probs
