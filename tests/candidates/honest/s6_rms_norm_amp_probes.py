"""Honest bf16 RMSNorm for bench/ops/rms_norm.py with the environment probes training code carries:
torch.compiler.is_compiling / torch.jit.is_scripting guards, autocast and grad-mode queries, torch.finfo for
the dtype's eps, a feature probe `hasattr(tl, ...)`, a 16-byte alignment check of data_ptr() choosing the
vectorised path, torch.cuda.device(x.device) (contextlib.nullcontext on CPU) around the launch (the Liger/fla
idiom for multi-GPU hosts), and an `if __name__ == "__main__":` self-test."""

import contextlib
import math

import torch
import triton
import triton.language as tl
from torch import nn

HAS_FAST_RSQRT = hasattr(tl, "rsqrt")


@triton.jit
def _rms_norm_fwd(X, Y, W, stride, n_cols, eps, BLOCK: tl.constexpr, ALIGNED: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    if ALIGNED:
        cols = tl.max_contiguous(tl.multiple_of(cols, 8), 8)
    mask = cols < n_cols
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    var = tl.sum(x * x, axis=0) / n_cols
    normed = (x * tl.rsqrt(var + eps)).to(Y.dtype.element_ty)
    w = tl.load(W + cols, mask=mask, other=0.0)
    tl.store(Y + row * stride + cols, (w.to(tl.float32) * normed.to(tl.float32)).to(Y.dtype.element_ty), mask=mask)


def _aligned(*tensors: torch.Tensor) -> bool:
    return all(t.data_ptr() % 16 == 0 for t in tensors)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float | None = None) -> torch.Tensor:
    if eps is None:
        eps = torch.finfo(torch.float32).eps
    if torch.jit.is_scripting() or torch.compiler.is_compiling():
        pass  # nothing special: the launch below is traceable
    if torch.is_grad_enabled() and x.requires_grad:
        raise RuntimeError("rms_norm: this kernel has no backward; call it under torch.no_grad()")
    dtype = torch.get_autocast_dtype("cuda") if torch.is_autocast_enabled() else x.dtype
    assert dtype == x.dtype, f"rms_norm: autocast to {dtype} is not supported (input {x.dtype})"
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    y = torch.empty_like(x2)
    n_rows, n_cols = x2.shape
    block = triton.next_power_of_2(n_cols)
    aligned = _aligned(x2, y, weight) and n_cols % 8 == 0
    with torch.cuda.device(x.device) if x.is_cuda else contextlib.nullcontext():
        _rms_norm_fwd[(n_rows,)](x2, y, weight, x2.stride(0), n_cols, eps, BLOCK=block, ALIGNED=aligned,
                                 num_warps=min(16, max(1, block // 256)))
    return y.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self, hidden: int = 4096, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden, dtype=torch.bfloat16))
        self.eps = eps
        self.hidden = hidden
        self.scale = 1.0 / math.sqrt(hidden)  # kept for logging parity with the reference module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.weight, self.eps)


if __name__ == "__main__":
    model = ModelNew(256)
    sample = torch.randn(4, 256, dtype=torch.bfloat16)
    with torch.no_grad():
        ref = model.weight * (sample.float() * torch.rsqrt(sample.float().pow(2).mean(-1, keepdim=True) + 1e-6)).to(
            sample.dtype)
        torch.testing.assert_close(model(sample), ref)
    print("ok")
