"""Minimal: a submodule of the file's own class, called from forward, that also has a PyTorch reference
method (forward_native, vLLM style) which nothing calls."""
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _silu_mul_kernel(out_ptr, in_ptr, d, stride_in, stride_out, BLOCK: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = offs < d
    g = tl.load(in_ptr + t * stride_in + offs, mask=m, other=0.0).to(tl.float32)
    u = tl.load(in_ptr + t * stride_in + d + offs, mask=m, other=0.0).to(tl.float32)
    a = (g * tl.sigmoid(g)).to(out_ptr.dtype.element_ty).to(tl.float32)
    tl.store(out_ptr + t * stride_out + offs, (a * u).to(out_ptr.dtype.element_ty), mask=m)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    d = x.shape[-1] // 2
    out = torch.empty(x.shape[:-1] + (d,), dtype=x.dtype, device=x.device)
    _silu_mul_kernel[(x.shape[0], triton.cdiv(d, 128))](out, x, d, x.stride(0), out.stride(0), BLOCK=128)
    return out
import torch.nn.functional as F


class SiluAndMul(nn.Module):
    def forward_native(self, x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1] // 2
        return F.silu(x[..., :d]) * x[..., d:]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return silu_and_mul(x)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.act_fn = SiluAndMul()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act_fn(x)
