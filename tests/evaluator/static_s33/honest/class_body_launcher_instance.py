import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _softmax_t_kernel(X, Y, N, inv_t, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    m = -float("inf")
    l = 0.0
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + row * N + cols, mask=cols < N, other=-float("inf")).to(tl.float32) * inv_t
        m_new = tl.maximum(m, tl.max(x, axis=0))
        l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + row * N + cols, mask=cols < N, other=-float("inf")).to(tl.float32) * inv_t
        tl.store(Y + row * N + cols, tl.exp(x - m) / l, mask=cols < N)


def softmax_temperature(logits, temperature):
    x2 = logits.reshape(-1, logits.shape[-1]).contiguous()
    y = torch.empty(x2.shape, dtype=torch.float32, device=logits.device)
    _softmax_t_kernel[(x2.shape[0],)](x2, y, x2.shape[1], 1.0 / temperature, BLOCK=4096)
    return y.view(logits.shape)


class _Launcher:
    def __call__(self, logits, t):
        return softmax_temperature(logits, t)

    def reference(self, logits, t):
        # eager reference for debugging, never called on the forward path
        return torch.softmax(logits.float() / t, dim=-1)


class ModelNew(nn.Module):
    launcher = _Launcher()

    def __init__(self, temperature: float = 0.7):
        super().__init__()
        self.temperature = temperature

    def forward(self, logits):
        return self.launcher(logits, self.temperature)
