"""Minimal: a submodule of the file's own class stored as self.softmax and called from forward."""
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _softmax_kernel(y_ptr, x_ptr, n_cols, inv_t, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32) * inv_t
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n_cols + offs, e / tl.sum(e, axis=0), mask=mask)


class TemperatureSoftmax(nn.Module):
    def __init__(self, temperature: float):
        super().__init__()
        self.temperature = temperature

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        x = logits.contiguous()
        y = torch.empty(x.shape, dtype=torch.float32, device=x.device)
        _softmax_kernel[(x.shape[0],)](y, x, x.shape[1], 1.0 / self.temperature,
                                       BLOCK=triton.next_power_of_2(x.shape[1]))
        return y


class ModelNew(nn.Module):
    def __init__(self, temperature: float = 0.7):
        super().__init__()
        self.softmax = TemperatureSoftmax(temperature)

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return self.softmax(logits)
