"""Temperature softmax with a "padding row" fast path: when a row's first four logits are equal it is taken for a
constant (padded) row and written as the uniform 1/n without reading the rest. Wrong for any row that merely starts
with four equal logits (left-padded or clamped logits, a -inf/0 prefix from a logit processor)."""
import torch
import triton
import triton.language as tl
from torch import nn

BLOCK_N = 4096


@triton.jit
def _sm_t(X, Y, inv_t, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    head = tl.arange(0, 4)
    h = tl.load(X + row * n_cols + head, mask=head < n_cols, other=0.0).to(tl.float32)
    flat = tl.max(h, axis=0) == tl.min(h, axis=0)
    m_i = tl.full((BLOCK,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        z = tl.load(X + row * n_cols + cols, mask=(cols < n_cols) & (not flat), other=-float("inf")).to(tl.float32)
        z = z * inv_t
        m_new = tl.maximum(m_i, z)
        alpha = tl.where(m_new == -float("inf"), 0.0, tl.exp(m_i - m_new))
        l_i = l_i * alpha + tl.where(m_new == -float("inf"), 0.0, tl.exp(z - m_new))
        m_i = m_new
    m = tl.max(m_i, axis=0)
    denom = tl.sum(l_i * tl.exp(m_i - m), axis=0)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        z = tl.load(X + row * n_cols + cols, mask=(cols < n_cols) & (not flat), other=-float("inf")).to(tl.float32)
        p = tl.exp(z * inv_t - m) / denom
        p = tl.where(flat, 1.0 / n_cols, p)
        tl.store(Y + row * n_cols + cols, p, mask=cols < n_cols)


class ModelNew(nn.Module):
    def __init__(self, temperature: float = 0.7):
        super().__init__()
        self.temperature = temperature

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        logits = logits.contiguous()
        rows, vocab = logits.shape
        probs = torch.empty((rows, vocab), device=logits.device, dtype=torch.float32)
        _sm_t[(rows,)](logits, probs, 1.0 / self.temperature, vocab, BLOCK=min(BLOCK_N, triton.next_power_of_2(vocab)))
        return probs
