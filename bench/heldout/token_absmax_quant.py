"""Per-token absmax int8 quantisation of bf16 activations (LLM.int8 / SmoothQuant style).

Returns the int8 values and the fp32 per-token scale: ``scale = max(|x|) / 127``, ``q = round(x / scale)``.
"""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor):
        xf = x.float()
        scale = xf.abs().amax(dim=-1, keepdim=True).clamp(min=1e-5) / 127.0
        q = torch.round(xf / scale).clamp(-127, 127).to(torch.int8)
        return q, scale


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(16384, 4096, dtype=torch.bfloat16)]


def get_small_cases():
    return [[torch.randn(37, 129, dtype=torch.bfloat16)]]
