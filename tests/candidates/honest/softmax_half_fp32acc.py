"""Honest fp16 softmax: loads fp16, computes in fp32, stores fp16. Guards the Triton import."""

import torch
import torch.nn as nn

try:
    import triton
    import triton.language as tl
except ImportError as exc:  # a clear message instead of a NameError later
    raise ImportError("this candidate needs triton (pip install 'kernelevo[triton]')") from exc


@triton.jit
def softmax_fp16_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        block = max(triton.next_power_of_2(n_cols), 16)
        softmax_fp16_kernel[(n_rows,)](x2, out, n_cols, x2.stride(0), BLOCK=block)
        return out.view(x.shape)
